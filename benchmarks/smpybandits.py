"""nslb's non-stationary baselines against SMPyBandits, on the same worlds (not a test).

    python -m benchmarks.smpybandits [--seeds 100] [--only REGEX] [--smpy-python PYTHON]

For each pair of ``PAIRS`` (an nslb agent and the SMPyBandits policy of the same
algorithm and parameters), both play the same seeds of one nslb environment — by default
the paper's fixed scenario (``env.dynamics=fixed env.model=known``, 2,000 rounds, K = 5) —
with the rewards exactly as nslb's worlds realise them (common random numbers: SMPyBandits
is given ``mean + noise``, or ``1[u < mean]`` for clicks, unscaled). The table gives each
side's mean final regret ± standard error, their difference in combined standard errors,
and the seconds each took (nslb: the simulation of all seeds at once; SMPyBandits: its
policy played seed after seed). SMPyBandits runs in a side virtual environment
(``make smpy-venv``: SMPyBandits 0.9.7 needs numpy < 2.1 and scipy < 1.15) through
``benchmarks/smpybandits_driver.py``.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from nslb_cli.agents import AGENTS
from nslb_cli.envs import ENVIRONMENTS
from nslb_cli.runner.config import RunConfig, RunSettings
from nslb_cli.runner.job import simulate_seeds

REPO = Path(__file__).resolve().parents[1]
DRIVER = Path(__file__).with_name("smpybandits_driver.py")
SIDE_PYTHON = REPO / ".bench" / "smpy-venv" / "bin" / "python"
FIXED = {"dynamics": "fixed", "model": "known"}


@dataclass(frozen=True)
class Pair:
    """An nslb agent and the SMPyBandits policy of the same algorithm and parameters.

    ``policy`` is a class of ``SMPyBandits.Policies`` (or a corrected one of the driver). A
    value of ``agent`` or ``kwargs`` given as a string starting with ``=`` is an expression of
    ``K``, ``T`` (the horizon), ``UPSILON`` (the number of changes) and ``math``, computed from
    the environment (``"=1 / math.sqrt(K * UPSILON * T)"``): both sides then use the same
    ``Upsilon``."""

    name: str
    agent: dict[str, Any]
    policy: str
    kwargs: dict[str, Any]
    env: dict[str, Any] = field(default_factory=lambda: dict(FIXED))
    note: str = ""


BERNOULLI = {**FIXED, "reward": "bernoulli"}
# GLR-klUCB as SMPyBandits' own non-stationary experiments run it (local restarts, the
# paper's deterministic forced exploration, Delta n = Delta s = 10), with delta and alpha
# given directly: 1 / sqrt(K Upsilon T) and alpha_0 sqrt(K Upsilon log T / T), alpha_0 = 0.05.
GLR_DELTA = "=1 / math.sqrt(K * UPSILON * T)"
GLR_ALPHA = "=0.05 * math.sqrt(K * UPSILON * math.log(T) / T)"
GLR_AGENT = {"name": "glr_klucb", "restarts": "local", "delta": GLR_DELTA, "alpha": GLR_ALPHA}
GLR_KWARGS = {
    "delta": GLR_DELTA,
    "alpha0": GLR_ALPHA,
    "per_arm_restart": True,
    "use_localization": False,
    "lazy_detect_change_only_x_steps": 10,
    "lazy_try_value_s_only_x_steps": 10,
}
GLR_NOTE = (
    "delta and alpha_0 passed directly, not via horizon and max_nb_random_events "
    "(smart_delta_from_T_UpsilonT replaces any K Upsilon T > 1 by 0.1: delta = 3.2)"
)
# CUSUM-UCB's h = log(T / Upsilon) and alpha = sqrt(Upsilon / T log(T / Upsilon)), on both sides.
CUSUM_H = "=math.log(T / UPSILON)"
CUSUM_ALPHA = "=math.sqrt(UPSILON / T * math.log(T / UPSILON))"

CUSUM_KWARGS = {
    "horizon": "=T",
    "max_nb_random_events": "=UPSILON",
    "policy": "UCB",
    "epsilon": 0.05,
    "min_number_of_observation_between_change_point": 100,
    "per_arm_restart": True,
    "use_localization": False,
    "lazy_detect_change_only_x_steps": 1,
}
"""SMPyBandits' CUSUM-UCB as both CUSUM rows run it: h and alpha from T and Upsilon,
M = 100, eps = 0.05, local restarts, every reward tested."""

PAIRS: tuple[Pair, ...] = (
    Pair(
        "sw_ucb",
        {"name": "sw_ucb", "tau": 100, "xi": 1.0, "bound": 1.0},
        "SWUCB",
        {"tau": 100, "alpha": 1.0},
        note="B sqrt(xi) = sqrt(alpha): B = 1, xi = alpha = 1",
    ),
    Pair(
        "d_ucb",
        {"name": "d_ucb", "gamma": 0.99, "xi": 0.125, "bound": 1.0},
        "EagerDiscountedUCB",
        {"gamma": 0.99, "alpha": 1.0},
        note="2 B sqrt(xi) = sqrt(alpha / 2): xi = alpha / 8; float counts, every arm "
        "discounted every round",
    ),
    Pair(
        "d_ucb (float counts, discounted at the next pull)",
        {"name": "d_ucb", "gamma": 0.99, "xi": 0.125, "bound": 1.0},
        "CorrectedDiscountedUCB",
        {"gamma": 0.99, "alpha": 1.0},
        note="only the integer counts corrected: stale counts between an arm's pulls",
    ),
    Pair(
        "d_ucb (SMPyBandits' integer counts)",
        {"name": "d_ucb", "gamma": 0.99, "xi": 0.125, "bound": 1.0},
        "DiscountedUCB",
        {"gamma": 0.99, "alpha": 1.0},
        note="the uncorrected class, for the record: its counts never exceed 1",
    ),
    Pair(
        "cusum_ucb",
        {"name": "cusum_ucb", "alpha": CUSUM_ALPHA, "threshold": CUSUM_H},
        "CorrectedCUSUM_IndexPolicy",
        CUSUM_KWARGS,
        note="h, alpha from T and Upsilon; M = 100, eps = 0.05; every reward tested",
    ),
    Pair(
        "cusum_ucb (SMPyBandits' CUSUM test)",
        {"name": "cusum_ucb", "alpha": CUSUM_ALPHA, "threshold": CUSUM_H},
        "CUSUM_IndexPolicy",
        CUSUM_KWARGS,
        note="the uncorrected class, for the record (same parameters)",
    ),
    Pair(
        "glr_klucb",
        GLR_AGENT,
        "OurGaussianGLR_IndexPolicy_WithDeterministicExploration",
        {**GLR_KWARGS, "sig2": 0.25, "policy": "PaperGaussianklUCB_forGLR"},
        note="Gaussian GLR (sigma^2 = 1/4), Gaussian kl-UCB, f = log + 3 log log; " + GLR_NOTE,
    ),
    Pair(
        "glr_klucb, Bernoulli rewards",
        GLR_AGENT,
        "BernoulliGLR_IndexPolicy_WithDeterministicExploration",
        {**GLR_KWARGS, "policy": "PaperklUCB_forGLR"},
        env=BERNOULLI,
        note="Bernoulli GLR and kl-UCB, f = log + 3 log log; " + GLR_NOTE,
    ),
    Pair(
        "d_ts, Bernoulli rewards",
        {"name": "d_ts", "gamma": 0.95},
        "CorrectedDiscountedThompson",
        {"gamma": 0.95},
        env=BERNOULLI,
        note="Beta(1 + S, 1 + F), gamma = 0.95; every unpulled arm discounted",
    ),
    Pair(
        "d_ts, Bernoulli rewards (SMPyBandits' discount)",
        {"name": "d_ts", "gamma": 0.95},
        "DiscountedThompson",
        {"gamma": 0.95},
        env=BERNOULLI,
        note="the uncorrected class, for the record: the pulled arm discounted K - 1 more times",
    ),
)
"""The pairs compared: the four of the issue on the paper's fixed scenario (Gaussian rewards),
GLR-klUCB on clicks too, D-TS on clicks (SMPyBandits' Beta posterior binarises Gaussian
rewards, so only clicks compare), and SMPyBandits' uncorrected classes (or partly corrected,
for D-UCB) to show what each defect changes. SMPyBandits has no SW-TS and no BOCD-TS."""


def worlds(env: dict[str, Any], seeds: np.ndarray) -> tuple[Any, Any]:
    """The nslb world of ``env`` for ``seeds``, and its parameters."""
    name = env.get("name", "synthetic")
    params = ENVIRONMENTS[name].Params(**{k: v for k, v in env.items() if k != "name"})
    return ENVIRONMENTS[name].build(params, seeds), params


def changes(world: Any) -> int:
    """The largest number of state changes of a seed (Upsilon_T, for the tunings)."""
    return int((np.diff(world.states, axis=1) != 0).sum(axis=1).max())


def resolve(values: dict[str, Any], world: Any) -> dict[str, Any]:
    """``values`` with each ``"=expr"`` string computed from ``world`` (``Pair``)."""
    K, T, upsilon = world.problem.n_arms, world.problem.horizon, changes(world)
    names = {"K": K, "T": T, "UPSILON": upsilon, "math": math}
    return {
        key: eval(value[1:], {"__builtins__": {}}, names)  # noqa: S307 (our own table)
        if isinstance(value, str) and value.startswith("=")
        else value
        for key, value in values.items()
    }


def run_nslb(
    pair: Pair, world: Any, env_params: Any, seeds: np.ndarray
) -> tuple[np.ndarray, float]:
    """nslb's final regret per seed, and the seconds of the simulation."""
    schema = AGENTS[pair.agent["name"]].Params
    agent = schema(**resolve(pair.agent, world))
    settings = RunSettings(n_seeds=len(seeds), batch_size=len(seeds), progress=False)
    config = RunConfig("compare", env_params, agent, settings)
    simulate_seeds(config, seeds[:2])  # untimed: loads (or compiles) the compiled kernels
    start = time.perf_counter()
    trace = simulate_seeds(config, seeds)
    return trace.regret.sum(axis=1), time.perf_counter() - start


def run_smpy(pair: Pair, world: Any, python: Path, folder: Path) -> tuple[np.ndarray, float, str]:
    """SMPyBandits' final regret per seed, its seconds, and the policy's own name."""
    kwargs = resolve(pair.kwargs, world)
    worlds_file = folder / "worlds.npz"
    reward = "bernoulli" if world.problem.reward_model.support == (0.0, 1.0) else "gaussian"
    np.savez(worlds_file, mean_rewards=world.mean_rewards, noise=world.noise, reward=reward)
    (folder / "policy.json").write_text(json.dumps({"class": pair.policy, "kwargs": kwargs}))
    result = folder / "result.json"
    subprocess.run(
        [str(python), str(DRIVER), str(worlds_file), str(folder / "policy.json"), str(result)],
        check=True,
        stdout=subprocess.DEVNULL,  # SMPyBandits' notices about optional packages
    )
    out = json.loads(result.read_text())
    return np.array(out["regret"]), float(out["seconds"]), str(out["policy"])


def mean_se(values: np.ndarray) -> tuple[float, float]:
    return float(values.mean()), float(values.std(ddof=1) / np.sqrt(len(values)))


def compare(pair: Pair, seeds: np.ndarray, python: Path) -> dict[str, Any]:
    world, params = worlds(pair.env, seeds)
    ours, our_seconds = run_nslb(pair, world, params, seeds)
    with tempfile.TemporaryDirectory() as folder:
        theirs, their_seconds, label = run_smpy(pair, world, python, Path(folder))
    (m1, s1), (m2, s2) = mean_se(ours), mean_se(theirs)
    return {
        "pair": pair.name,
        "class": pair.policy,
        "policy": label,
        "nslb": (m1, s1),
        "smpybandits": (m2, s2),
        "combined_se": (m1 - m2) / math.hypot(s1, s2),
        "seconds": (our_seconds, their_seconds),
        "note": pair.note,
    }


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=100)
    p.add_argument("--only", metavar="REGEX", help="pairs whose name matches")
    p.add_argument("--smpy-python", type=Path, default=SIDE_PYTHON)
    p.add_argument("--json", type=Path, help="also write the rows as JSON")
    args = p.parse_args(argv)
    if not args.smpy_python.exists():
        sys.exit(f"no SMPyBandits environment at {args.smpy_python}: run `make smpy-venv`")
    seeds = np.arange(args.seeds)
    rows = [
        compare(pair, seeds, args.smpy_python)
        for pair in PAIRS
        if not args.only or re.search(args.only, pair.name)
    ]
    print(
        "| agent | nslb | SMPyBandits | Δ / combined SE | SMPyBandits class | "
        "nslb s | SMPyBandits s | ratio |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for row in rows:
        (m1, s1), (m2, s2) = row["nslb"], row["smpybandits"]
        ours, theirs = row["seconds"]
        print(
            f"| {row['pair']} | {m1:.1f} ± {s1:.1f} | {m2:.1f} ± {s2:.1f} | "
            f"{row['combined_se']:+.2f} | `{row['class']}` | {ours:.3f} | {theirs:.1f} | "
            f"{theirs / ours:.0f} |"
        )
    for row in rows:
        print(f"- {row['pair']}: {row['policy']}; {row['note']}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
