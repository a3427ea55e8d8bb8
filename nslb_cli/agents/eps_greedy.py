"""ε-greedy (docs/design.md §4.11), the baseline of the newer latent-bandit papers.

Per run and arm the agent keeps the pulls and the reward sum. Each round, with probability
``epsilon`` it pulls a uniform arm, otherwise the arm of best empirical mean (an arm never
pulled counts as best, the lowest such arm first; ties to the lowest arm). Two uniforms per run
and round from the agent's stream, drawn in blocks of rounds: ``u_1 < epsilon`` decides, and
``floor(u_2 K)`` is the uniform arm. Nothing is forgotten: the model-free reference against
which forgetting and detection are measured. Reported per seed: ``explorations``, the rounds
spent on uniform arms.

The plugin example ``examples/epsilon_greedy`` (``agent=epsilon_greedy``) is another agent: it
restarts every ``restart_every`` rounds and draws round by round.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nslb_cli.agents.base import Agent
from nslb_cli.agents.round_draws import RoundDraws
from nslb_cli.bandit.problem import OfflineModel, Problem
from nslb_cli.bandit.rng import BatchRNG
from nslb_cli.common import validators as check


@dataclass
class EpsGreedyParams(check.Section):
    name: str = "eps_greedy"
    # probability of a uniformly random arm
    epsilon: float = 0.1

    def validate(self) -> None:
        check.probability(self.epsilon, "epsilon")


class EpsilonGreedy(Agent):
    """ε-greedy on each arm's empirical mean; see the module docstring."""

    display_name = "ε-greedy"
    Params = EpsGreedyParams
    fixed_arms = True

    def __init__(
        self, params: EpsGreedyParams, problem: Problem, model: OfflineModel, rng: BatchRNG
    ) -> None:
        super().__init__(params, problem, model, rng)
        self.pulls = np.zeros((problem.n_runs, problem.n_arms))
        self.sums = np.zeros((problem.n_runs, problem.n_arms))
        self.explorations = np.zeros(problem.n_runs, dtype=np.int64)
        self._uniforms = RoundDraws(rng.random, (2,))
        self._runs = np.arange(problem.n_runs)

    def act(self, t: int, contexts: np.ndarray | None) -> np.ndarray:
        u = self._uniforms.next()
        explore = u[:, 0] < self.params.epsilon
        uniform = np.minimum(
            (u[:, 1] * self.problem.n_arms).astype(np.int64), self.problem.n_arms - 1
        )
        means = np.where(self.pulls > 0, self.sums / np.maximum(self.pulls, 1.0), np.inf)
        self.explorations += explore
        return np.where(explore, uniform, means.argmax(axis=1))

    def update(
        self, t: int, contexts: np.ndarray | None, actions: np.ndarray, rewards: np.ndarray
    ) -> None:
        self.pulls[self._runs, actions] += 1.0
        self.sums[self._runs, actions] += rewards

    def summary(self) -> dict[str, np.ndarray]:
        return {"explorations": self.explorations}
