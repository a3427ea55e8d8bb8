"""Epsilon-greedy with periodic restarts, for nslb (``agent=epsilon_greedy``).

Per run and arm the agent keeps the pulls and the reward sum since its last restart. Each
round it pulls a uniformly random arm with probability ``epsilon``, else the arm of best mean
(arms not yet pulled first). Every ``restart_every`` rounds it forgets everything: a blunt
answer to a changing world, without a model or a change detector.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nslb_cli.api import Agent, BatchRNG, OfflineModel, Problem, check


@dataclass
class EpsilonGreedyParams:
    name: str = "epsilon_greedy"  # the entry point's name
    epsilon: float = 0.1  # probability of a uniformly random arm
    restart_every: int = 200  # rounds between restarts; 0: never

    def __post_init__(self) -> None:
        check.probability(self.epsilon, "epsilon")
        check.non_negative(self.restart_every, "restart_every")


class EpsilonGreedy(Agent):
    Params = EpsilonGreedyParams
    fixed_arms = True  # learns per arm: nslb refuses it on environments with contexts
    display_name = "Restarting ε-greedy"  # in nslb plot's legends (style: the next free one)

    def __init__(
        self, params: EpsilonGreedyParams, problem: Problem, model: OfflineModel, rng: BatchRNG
    ) -> None:
        super().__init__(params, problem, model, rng)
        self.pulls = np.zeros((problem.n_runs, problem.n_arms))
        self.sums = np.zeros((problem.n_runs, problem.n_arms))
        self.explorations = np.zeros(problem.n_runs, dtype=np.int64)

    def act(self, t: int, contexts: np.ndarray | None) -> np.ndarray:
        means = np.where(self.pulls > 0, self.sums / np.maximum(self.pulls, 1), np.inf)
        explore = self.rng.random() < self.params.epsilon  # one draw per run and round
        uniform = self.rng.integers(self.problem.n_arms)
        self.explorations += explore
        return np.where(explore, uniform, means.argmax(axis=1))

    def update(
        self, t: int, contexts: np.ndarray | None, actions: np.ndarray, rewards: np.ndarray
    ) -> None:
        runs = np.arange(self.problem.n_runs)
        self.pulls[runs, actions] += 1
        self.sums[runs, actions] += rewards
        if self.params.restart_every and (t + 1) % self.params.restart_every == 0:
            self.pulls[:] = 0.0
            self.sums[:] = 0.0

    def summary(self) -> dict[str, np.ndarray]:
        return {"explorations": self.explorations}
