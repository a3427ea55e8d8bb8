"""Agents that each break one rule of the plugin interface, for the conformance checks.

``tests.runner.test_conformance`` expects each to fail its own check and only it;
``tests.cli.test_check`` installs ``GlobalRandom`` as a plugin and runs ``nslb check``
on it (the entry point ``tests.helpers.faulty_agents:GlobalRandom``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nslb_cli.agents.base import Belief
from nslb_cli.agents.reference import UniformRandom


@dataclass
class FaultyParams:
    name: str = "faulty"


class _Faulty(UniformRandom):
    Params = FaultyParams


class GlobalRandom(_Faulty):
    def act(self, t: int, contexts: np.ndarray | None) -> np.ndarray:
        return np.random.randint(self.problem.n_arms, size=self.problem.n_runs)  # noqa: NPY002


class FloatActions(_Faulty):
    def act(self, t: int, contexts: np.ndarray | None) -> np.ndarray:
        return super().act(t, contexts).astype(float)


class OutOfRange(_Faulty):
    def act(self, t: int, contexts: np.ndarray | None) -> np.ndarray:
        return super().act(t, contexts) + (t == 5) * self.problem.n_arms


class FirstGeneratorForAll(_Faulty):
    """Draws every run's arm from the first run's generator: depends on the batch."""

    def act(self, t: int, contexts: np.ndarray | None) -> np.ndarray:
        return self.rng.generators[0].integers(self.problem.n_arms, size=self.problem.n_runs)


class ModelWriter(_Faulty):
    def update(self, t, contexts, actions, rewards) -> None:
        self.model.means[:, 0, 0] += 0.01


class UnnormalisedBelief(_Faulty):
    def belief(self) -> Belief | None:
        runs, states = self.problem.n_runs, self.problem.n_states
        return Belief(np.zeros(runs, dtype=np.int64), np.full((runs, states), 0.5))


class SometimesBelief(_Faulty):
    def act(self, t: int, contexts: np.ndarray | None) -> np.ndarray:
        self.t = t
        return super().act(t, contexts)

    def belief(self) -> Belief | None:
        runs, states = self.problem.n_runs, self.problem.n_states
        one_hot = np.zeros((runs, states))
        one_hot[:, 0] = 1.0
        return None if self.t >= 3 else Belief(np.zeros(runs, dtype=np.int64), one_hot)


class BadSummary(_Faulty):
    def summary(self) -> dict[str, np.ndarray]:
        return {"pulls": np.zeros((self.problem.n_runs, 2))}


class RaisesLate(_Faulty):
    def update(self, t, contexts, actions, rewards) -> None:
        if t == 50:
            raise FloatingPointError("overflow in the posterior")
