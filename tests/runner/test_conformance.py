"""Every registered agent passes the conformance checks of `nslb check`, and they can fail."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pytest

from nslb_cli.agents import AGENTS
from nslb_cli.agents.base import Agent, Belief
from nslb_cli.agents.reference import UniformRandom
from nslb_cli.runner.conformance import CHECKS, Setting, default_settings, run_checks


def bernoulli_settings() -> list[Setting]:
    """The default settings with Bernoulli rewards (``nslb check env.reward=bernoulli``)."""
    return [Setting(s.env, replace(s.params, reward="bernoulli")) for s in default_settings()]


@pytest.mark.parametrize("reward", ["gaussian", "bernoulli"])
@pytest.mark.parametrize("name", sorted(AGENTS))
def test_every_registered_agent_passes_every_check(name: str, reward: str) -> None:
    settings = default_settings() if reward == "gaussian" else bernoulli_settings()
    outcomes = run_checks(AGENTS[name], AGENTS[name].Params(), settings)
    assert [o.check for o in outcomes] == [c.name for c in CHECKS]
    failed = [o.line() for o in outcomes if not o.passed]
    assert not failed, "\n".join(failed)


def test_bernoulli_worlds_give_clicks() -> None:
    """The checks above do play Bernoulli rewards (every reward 0 or 1)."""
    for setting in bernoulli_settings():
        world = setting.env.build(setting.params, np.array([2, 7]))
        rewards = np.stack([world.reward(t, np.zeros(2, dtype=np.int64)) for t in range(50)])
        assert set(np.unique(rewards)) == {0.0, 1.0}


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


FAULTS = [
    (
        GlobalRandom,
        {
            "determinism": "two runs of the same seeds differ: seed 2: action",
            "batch invariance": "alone, then in a batch: seed 7: action",
        },
    ),
    (FloatActions, {"runs": "IndexError", "actions": "round 1: act returned dtype float64"}),
    (OutOfRange, {"runs": "IndexError", "actions": "round 6: act returned arm 9, outside [0, 5)"}),
    (FirstGeneratorForAll, {"batch invariance": "alone, then in a batch: seed 7: action"}),
    (ModelWriter, {"common random numbers": "the agent modified the offline model's means"}),
    (UnnormalisedBelief, {"belief": "round 1: belief posterior rows sum to 1 ± 1.5"}),
    (SometimesBelief, {"belief": "a belief in round 1, none in round 4"}),
    (BadSummary, {"summary": "summary 'pulls' is ndarray of shape (4, 2), expected (4,)"}),
    (RaisesLate, {"runs": "FloatingPointError: overflow in the posterior"}),
]


@pytest.mark.parametrize(("agent", "failures"), FAULTS, ids=[a.__name__ for a, _ in FAULTS])
def test_each_fault_fails_its_check_and_only_it(
    agent: type[Agent], failures: dict[str, str]
) -> None:
    outcomes = {o.check: o for o in run_checks(agent, FaultyParams(), default_settings())}
    for check, message in failures.items():
        assert outcomes[check].status == "FAIL"
        assert message in outcomes[check].detail
        assert outcomes[check].detail.startswith("synthetic (dynamics=fixed")
    crashed = "runs" in failures
    for check, outcome in outcomes.items():
        if check not in failures:
            assert outcome.status == ("skip" if crashed and check != "actions" else "pass"), check
