"""Runs the LARL authors' code (``annatrella/latent-auto-bandits``) for
``benchmarks.latent_ar``, in a process of its own (their code draws from numpy's global
generator).

    python benchmarks/latent_ar_driver.py CLONE PROTOCOL SEEDS OUT.json

``PROTOCOL`` is ``authors`` (their ``run_simulations_exp2.py``, unchanged: agents built once
per ``k`` and reused across the seeds, one global generator for the environment, the agents
and the ground truth) or ``corrected`` (a fresh agent per seed; the environment's latent
innovations, reward noise and initial values from a generator of their own, one per seed,
shared by the ground truth; the agents draw from numpy's global generator, which nothing
else touches; and LARL-ETC keeps the fit of the ``s`` it chose when that ``s`` is
``max_s``). Their SW-UCB is left out: it is not Garivier & Moulines's (its counts are
discounted by the window length, ``tau^(t - s)``), it has no counterpart in nslb, and its
integer powers overflow under numpy 2; it draws no random numbers, so leaving it out
changes no other agent's numbers. Writes ``{k: {agent: [regret of each seed]}}``, regret
summed over rounds ``t >= k`` against the best arm given ``z_t`` (their
``make_pairwise_plots_exp2.py``).
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import types
from collections.abc import Callable
from typing import Any

import numpy as np

KS = (1, 5, 10)
T = 200


def _import(clone: str) -> dict[str, Any]:
    """The authors' modules; ``lds.py`` imports python-control for the Kalman agent, which
    their experiments do not run: a stand-in module takes its place."""
    sys.modules.setdefault("control", types.ModuleType("control"))
    sys.path.insert(0, clone)
    import baseline_non_stat_agents
    import environment
    import generate_valid_env
    import simulations
    import ucb_agents

    return {
        "Environment": environment.Environment,
        "run": simulations.run_simulation,
        "truth": simulations.calculate_ground_truth,
        "gammas": generate_valid_env.generate_centered_stable_weights,
        "ucb": ucb_agents,
        "Rexp3": baseline_non_stat_agents.Rexp3,
    }


def _regret(actions: np.ndarray, truth: dict[str, Any], k: int) -> float:
    means = np.where(np.asarray(actions) == 1, truth["mean reward 1"], truth["mean reward 0"])
    best = np.maximum(truth["mean reward 1"], truth["mean reward 0"])
    return float(np.sum(best[k:] - means[k:]))


def _agents(code: dict[str, Any], k: int, fixed_etc: bool) -> dict[str, Any]:
    ucb = code["ucb"]
    etc = _loaded_etc(ucb.LARL_ETC) if fixed_etc else ucb.LARL_ETC
    agents = {
        "LARL-ETC": etc(T // 5, 15),
        "Stationary": ucb.StationaryAgent(),
        "AR UCB": ucb.ARUCB(k),
        "Rexp3": code["Rexp3"](T, T),
    }
    if fixed_etc:
        agents["LARL-ETC (their s = max_s fit)"] = ucb.LARL_ETC(T // 5, 15)
    return agents


def _loaded_etc(base: type) -> type:
    """LARL-ETC that keeps the fit of the chosen ``s`` also when it is ``max_s`` (the
    original keeps its empty regressions then: ``if best_idx != self.max_s - 1``)."""

    class Loaded(base):  # type: ignore[misc, valid-type]
        def update(self, actions: Any, rewards: Any, states: Any, t: int) -> None:
            super().update(actions, rewards, states, t)
            if t == self.explore_t and self.s == self.max_s:  # a fresh agent: BIC chose max_s
                s = self.s
                x = self.compute_states(actions[: t + 1], rewards[: t + 1], s)
                fit = self.compute_theta_hats(x, actions[s : t + 1], rewards[s : t + 1])
                self.Vs, self.bs, self.theta_hats = fit

    return Loaded


def _streamed(environment: type, z_noise: np.ndarray, r_noise: np.ndarray) -> Callable:
    """The authors' environment with its noise read from arrays, not numpy's global
    generator: the same path and rewards whoever plays it."""

    class Streamed(environment):  # type: ignore[misc, valid-type]
        def state_evolution(self) -> None:
            recent = self.gammas @ np.flip(np.array(self.get_recent_zs()))
            self.zs[self.t] = self.gamma_0 + recent + z_noise[self.t]

        def get_reward(self, action: int) -> float:
            z = self.zs[self.t]
            return self.mu_a[action] + self.beta_a[action] * z + r_noise[self.t]

    return Streamed


def run(clone: str, protocol: str, seeds: int) -> dict[str, dict[str, list[float]]]:
    """Each ``k``'s per-seed regrets of each of the authors' agents under ``protocol``."""
    code = _import(clone)
    gammas = [code["gammas"](k, 2, 123) for k in KS]  # their module-level order
    results: dict[str, dict[str, list[float]]] = {}
    for k, gamma in zip(KS, gammas, strict=True):
        params = {"gamma_0": 0, "mu_a": [0, 0], "beta_a": [-1.0, 1.0], "sigma_z": 1,
                  "sigma_r": 1, "K": k, "gammas": gamma}  # fmt: skip
        regrets: dict[str, list[float]] = {}
        agents = _agents(code, k, False) if protocol == "authors" else {}
        for seed in range(seeds):
            if protocol == "authors":
                params["init_zs"] = 10 * np.random.randn(k)  # noqa: NPY002  (their protocol)
                env: Callable = code["Environment"]
            else:
                agents = _agents(code, k, True)
                stream = np.random.default_rng([seed, k])
                params["init_zs"] = 10 * stream.standard_normal(k)
                env = _streamed(
                    code["Environment"], stream.standard_normal(T), stream.standard_normal(T)
                )
            truth = code["truth"](env(params, T=T), seed)
            for name, agent in agents.items():
                actions, _, _ = code["run"](env(params, T=T), agent, seed)
                regrets.setdefault(name, []).append(_regret(actions, truth, k))
        results[str(k)] = regrets
    return results


if __name__ == "__main__":
    clone, protocol, seeds, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    with contextlib.redirect_stdout(io.StringIO()):  # their agents print as they go
        found = run(clone, protocol, seeds)
    with open(out, "w", encoding="utf-8") as handle:
        json.dump(found, handle)
