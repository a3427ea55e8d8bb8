"""Rexp3: Exp3 restarted in batches (Besbes, Gur & Zeevi, NeurIPS 2014; docs/design.md §4.9).

Rounds are cut into batches of ``Delta`` rounds; each batch starts Exp3 afresh (``w = 1``).
Within a batch, with ``K`` arms:

    p_t(a) = (1 - gamma) w(a) / sum_b w(b) + gamma / K,     A_t ~ p_t
    w(A_t) <- w(A_t) exp(gamma R_t / (K p_t(A_t)))

Defaults (``null``), the paper's Theorem 2 for a variation budget ``V_T``:
``Delta = ceil((K log K)^(1/3) (T / V_T)^(2/3))`` and
``gamma = min(1, sqrt(K log K / ((e - 1) Delta)))``; ``V_T = T`` as the LARL paper sets it (a
latent that moves every round has no sublinear budget), which gives ``Delta = 2`` and
``gamma = 0.635`` for ``K = 2``. The LARL authors' code uses ``e`` for ``e - 1`` (``gamma =
0.505``): ``agent.gamma`` sets any value. Rewards enter as they are, as in the LARL paper
(Exp3's analysis assumes rewards in ``[0, 1]``). Weights are kept as logarithms, so no
reward overflows them. One uniform per run and round from the agent's stream draws
``A_t`` by inverse CDF (ties impossible). ``summary()``: ``batch`` and ``gamma`` per run.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nslb_cli.agents.base import Agent
from nslb_cli.agents.round_draws import RoundDraws
from nslb_cli.bandit.problem import OfflineModel, Problem
from nslb_cli.bandit.rng import BatchRNG, categorical
from nslb_cli.common import validators as check


@dataclass
class Rexp3Params(check.Section):
    """``rexp3``'s parameters; ``None`` means computed (module docstring)."""

    name: str = "rexp3"
    # Delta, rounds per batch; null: ceil((K log K)^(1/3) (T / V)^(2/3)) (Theorem 2)
    batch: int | None = None
    # exploration rate in (0, 1]; null: min(1, sqrt(K log K / ((e - 1) Delta)))
    gamma: float | None = None
    # V, the variation budget; null: T, as the LARL paper sets it
    variation: float | None = None

    def validate(self) -> None:
        if self.batch is not None:
            check.positive(self.batch, "batch")
        if self.gamma is not None:
            check.require(0.0 < self.gamma <= 1.0, "gamma", f"must be in (0, 1], got {self.gamma}")
        if self.variation is not None:
            check.positive(self.variation, "variation")


def besbes_tuning(n_arms: int, horizon: int, variation: float) -> tuple[int, float]:
    """``(Delta, gamma)`` of Besbes et al.'s Theorem 2."""
    spread = n_arms * np.log(n_arms)
    batch = int(np.ceil(spread ** (1 / 3) * (horizon / variation) ** (2 / 3)))
    batch = max(1, min(batch, horizon))
    return batch, float(min(1.0, np.sqrt(spread / ((np.e - 1.0) * batch))))


class Rexp3(Agent):
    """Rexp3 (Besbes et al., 2014): Exp3 restarted every batch of rounds (module docstring)."""

    display_name = "Rexp3"
    legend_rank = 170

    Params = Rexp3Params
    fixed_arms = True

    def __init__(
        self, params: Rexp3Params, problem: Problem, model: OfflineModel, rng: BatchRNG
    ) -> None:
        super().__init__(params, problem, model, rng)
        R, K, T = problem.n_runs, problem.n_arms, problem.horizon
        variation = float(T) if params.variation is None else params.variation
        batch, gamma = besbes_tuning(K, T, variation)
        self.batch = batch if params.batch is None else params.batch
        self.gamma = gamma if params.gamma is None else float(params.gamma)
        self.log_weights = np.zeros((R, K))
        self.probabilities = np.full((R, K), 1.0 / K)
        self._uniforms = RoundDraws(rng.random)
        self._runs = np.arange(R)

    def act(self, t: int, contexts: np.ndarray | None) -> np.ndarray:
        K = self.problem.n_arms
        if t % self.batch == 0:
            self.log_weights[:] = 0.0
        w = np.exp(self.log_weights - self.log_weights.max(axis=1, keepdims=True))
        self.probabilities = (1.0 - self.gamma) * w / w.sum(axis=1, keepdims=True) + self.gamma / K
        return categorical(self.probabilities, self._uniforms.next())

    def update(
        self, t: int, contexts: np.ndarray | None, actions: np.ndarray, rewards: np.ndarray
    ) -> None:
        pulled = self.probabilities[self._runs, actions]
        self.log_weights[self._runs, actions] += (
            self.gamma * rewards / (self.problem.n_arms * pulled)
        )

    def summary(self) -> dict[str, np.ndarray]:
        R = self.problem.n_runs
        return {"batch": np.full(R, self.batch), "gamma": np.full(R, self.gamma)}
