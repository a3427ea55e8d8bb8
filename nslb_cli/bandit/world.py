"""The world: every random thing about an environment, for a batch of seeds.

A world is built from an environment config and seeds only (never from the agent), so all
agents run with the same seed face the same latent path, the same reward noise and the
same true parameters (common random numbers, docs/design.md §2).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from nslb_cli.bandit.problem import OfflineModel, Problem, Truth


@dataclass(frozen=True)
class World:
    """A batch of environment realisations.

    Attributes:
        problem: sizes, horizon and reward model (how a reward scatters around its mean).
        seeds: ``(R,)`` the seed of each run.
        states: ``(R, n)`` the true latent state ``S_t``.
        mean_rewards: ``(R, n, K)`` ``mu(a, X_t, S_t; theta*)`` of every arm in every round.
        noise: ``(R, n)`` the reward noise, one draw per round (not per arm): ``eps_t`` for
            Gaussian rewards, ``u_t ~ U(0, 1)`` for Bernoulli ones
            (``nslb_cli.bandit.rewards.RewardModel.realise`` makes it a reward).
        offline_model: what model-based agents are told.
        items: ``(R, n, K)`` for contextual worlds, the item behind each arm in each round
            (ids, not feature copies, to keep memory small); ``None`` without context.
        features: ``(n_items, d)`` the feature vector shown to agents for each item.
        emissions: ``(R, S, K, N)`` the outcome laws ``O[s, a, ·]`` of categorical outcomes
            (``Categorical``): the reward of a pull is drawn from
            the pulled arm's law in the true state with the round's uniform; ``None`` where a
            reward is a function of its mean.
        summary: the environment's own statistics of each run, ``(R,)`` each (the fit of a
            learned offline model), written to ``seed=K.json`` beside the agent's
            ``summary()``; empty for most worlds.
    """

    problem: Problem
    seeds: np.ndarray
    states: np.ndarray
    mean_rewards: np.ndarray
    noise: np.ndarray
    offline_model: OfflineModel
    items: np.ndarray | None = None
    features: np.ndarray | None = None
    emissions: np.ndarray | None = None
    summary: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def truth(self) -> Truth:
        """The narrow view of this world that the oracle is given."""
        return Truth(states=self.states, mean_rewards=self.mean_rewards)

    def context(self, t: int) -> np.ndarray | None:
        """The context ``X_t``, ``(R, K, d)``, shown in round ``t`` (``None`` if multi-armed)."""
        if self.items is None or self.features is None:
            return None
        return np.take(self.features, self.items[:, t], axis=0)

    def reward(self, t: int, actions: np.ndarray) -> np.ndarray:
        """``R_t`` for each run: ``mu(A_t, X_t, S_t; theta*) + eps_t`` (Gaussian) or
        ``1[u_t < mu(A_t, X_t, S_t; theta*)]`` (Bernoulli)."""
        return self.outcome(t, actions)[1]

    def outcome(self, t: int, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(mu(A_t, X_t, S_t; theta*), R_t)`` for each run: ``expected_reward`` and
        ``reward`` at once."""
        expected = self.expected_reward(t, actions)
        drawn = expected if self.emissions is None else self._laws(self.states[:, t], actions)
        return expected, self.problem.reward_model.realise(drawn, self.noise[:, t])

    def _laws(self, states: np.ndarray, actions: np.ndarray) -> np.ndarray:
        """The outcome laws ``O[S, A, ·]`` of pulls (``states`` and ``actions`` ``(R,)`` or
        ``(R, n)``)."""
        assert self.emissions is not None
        runs = self.runs.reshape((-1,) + (1,) * (np.ndim(actions) - 1))
        return self.emissions[runs, states, actions]

    def realised(self, actions: np.ndarray) -> np.ndarray:
        """The rewards that the actions ``(R, n)`` of a whole run receive in this world."""
        pulled = np.take_along_axis(self.mean_rewards, actions[:, :, None], axis=2)[:, :, 0]
        drawn = pulled if self.emissions is None else self._laws(self.states, actions)
        return self.problem.reward_model.realise(drawn, self.noise)

    def expected_reward(self, t: int, actions: np.ndarray) -> np.ndarray:
        """``mu(A_t, X_t, S_t; theta*)`` for each run."""
        return self.mean_rewards[self.runs, t, actions]

    def part(self, runs: slice) -> World:
        """The world of the runs ``runs`` alone (views of this one's arrays): the world those
        seeds would have by themselves, since nothing about a seed depends on its batch."""
        model = self.offline_model
        per_run = {
            field.name: getattr(model, field.name)[runs]
            for field in dataclasses.fields(model)
            if getattr(model, field.name) is not None
        }
        seeds = self.seeds[runs]
        return dataclasses.replace(
            self,
            problem=dataclasses.replace(self.problem, n_runs=len(seeds)),
            seeds=seeds,
            states=self.states[runs],
            mean_rewards=self.mean_rewards[runs],
            noise=self.noise[runs],
            offline_model=dataclasses.replace(model, **per_run),
            items=None if self.items is None else self.items[runs],
            emissions=None if self.emissions is None else self.emissions[runs],
            summary={key: values[runs] for key, values in self.summary.items()},
        )

    @cached_property
    def runs(self) -> np.ndarray:
        """``0 .. R - 1``, the index of every run (built once, read-only as the rest)."""
        runs = np.arange(len(self.seeds))
        runs.flags.writeable = False
        return runs

    def optimal_reward(self) -> np.ndarray:
        """``max_a mu(a, X_t, S_t; theta*)``, shape ``(R, n)``."""
        return self.mean_rewards.max(axis=2)
