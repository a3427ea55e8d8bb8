"""Reference agents for plots: the oracle (zero regret) and uniform random play."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nslb_cli.agents.base import Agent, Belief, Style
from nslb_cli.agents.round_draws import RoundDraws
from nslb_cli.bandit.problem import OfflineModel, Problem, Truth
from nslb_cli.bandit.rng import BatchRNG
from nslb_cli.common import validators as check


@dataclass
class OracleParams(check.Section):
    name: str = "oracle"


class Oracle(Agent):
    """Oracle: knows ``S_t`` and ``theta*``, pulls ``argmax_a mu(a, X_t, S_t; theta*)``.

    It is the only agent that sees the truth (``sees_truth``), through a ``Truth``.
    """

    display_name = "Oracle"
    legend_rank = 230
    style = Style("#000000", (0, (1, 1)), "*")

    Params = OracleParams
    sees_truth = True

    def __init__(
        self,
        params: OracleParams,
        problem: Problem,
        model: OfflineModel,
        rng: BatchRNG,
        truth: Truth,
    ) -> None:
        super().__init__(params, problem, model, rng)
        self.mean_rewards = truth.mean_rewards
        self.states = truth.states
        self._belief: Belief | None = None

    def act(self, t: int, contexts: np.ndarray | None) -> np.ndarray:
        state = self.states[:, t]
        posterior = np.eye(self.problem.n_states)[state]
        self._belief = Belief(state=state, posterior=posterior)
        return self.mean_rewards[:, t, :].argmax(axis=1)

    def update(
        self, t: int, contexts: np.ndarray | None, actions: np.ndarray, rewards: np.ndarray
    ) -> None:
        """The oracle learns nothing."""

    def belief(self) -> Belief | None:
        return self._belief


@dataclass
class RandomParams(check.Section):
    name: str = "random"


class UniformRandom(Agent):
    """Uniform random play: an arm drawn uniformly every round."""

    display_name = "Random"
    legend_rank = 240
    style = Style("#7F7F7F", (0, (3, 1, 1, 1)), "X")

    Params = RandomParams

    def __init__(
        self, params: RandomParams, problem: Problem, model: OfflineModel, rng: BatchRNG
    ) -> None:
        super().__init__(params, problem, model, rng)
        self._uniforms = RoundDraws(rng.random)  # the numbers of rng.integers, in blocks

    def act(self, t: int, contexts: np.ndarray | None) -> np.ndarray:
        """``floor(u K)`` for ``u ~ U[0, 1)``: ``BatchRNG.integers``'s arm, drawn faster."""
        return np.floor(self._uniforms.next() * self.problem.n_arms).astype(np.int64)

    def update(
        self, t: int, contexts: np.ndarray | None, actions: np.ndarray, rewards: np.ndarray
    ) -> None:
        """Random play learns nothing."""
