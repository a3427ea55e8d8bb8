"""Every registered agent passes the conformance checks of `nslb check`, and they can fail."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pytest

from nslb_cli.agents import AGENTS
from nslb_cli.agents.base import Agent
from nslb_cli.agents.reference import UniformRandom
from nslb_cli.bandit.problem import OfflineModel, Problem, Sizes
from nslb_cli.bandit.rng import BatchRNG
from nslb_cli.envs import ENVIRONMENTS
from nslb_cli.runner.conformance import CHECKS, DEFAULT_ENVS, Setting, run_checks
from tests.helpers.faulty_agents import (
    BadSummary,
    FaultyParams,
    FirstGeneratorForAll,
    FloatActions,
    GlobalRandom,
    ModelWriter,
    OutOfRange,
    RaisesLate,
    SometimesBelief,
    UnnormalisedBelief,
)

NEEDS_OUTCOME_LAWS = {"sl_ec"}  # agents refused without known outcome laws (env=switching_latent)


def default_settings() -> list[Setting]:
    """The settings ``nslb check`` checks on without ``env=``: DEFAULT_ENVS as settings."""
    settings = []
    for values in DEFAULT_ENVS:
        env = ENVIRONMENTS[values["name"]]
        settings.append(Setting(env, replace(env.Params(), **values)))
    return settings


def bernoulli_settings() -> list[Setting]:
    """The default settings with Bernoulli rewards (``nslb check env.reward=bernoulli``)."""
    return [Setting(s.env, replace(s.params, reward="bernoulli")) for s in default_settings()]


# Agents whose defaults need what the default settings lack: an AR model (its order, for
# AR-UCB; all of it for the Kalman oracle, checked on env=latent_ar below).
ON_DEFAULT_SETTINGS = {"ar_ucb": {"s": 2}}
LATENT_AR_AGENTS = ("larl", "larl_etc", "ar_ucb", "rexp3", "kalman_oracle", "sw_ucb", "glr_klucb")


@pytest.mark.parametrize("reward", ["gaussian", "bernoulli"])
@pytest.mark.parametrize("name", sorted(set(AGENTS) - {"kalman_oracle"}))
def test_every_registered_agent_passes_every_check(name: str, reward: str) -> None:
    settings = default_settings() if reward == "gaussian" else bernoulli_settings()
    if name in NEEDS_OUTCOME_LAWS:  # checked where they apply: categorical, then 2 outcomes
        env = ENVIRONMENTS["switching_latent"]
        kind = "categorical" if reward == "gaussian" else "bernoulli"
        settings = [Setting(env, env.Params(reward=kind, horizon=300))]
    params = replace(AGENTS[name].Params(), **ON_DEFAULT_SETTINGS.get(name, {}))
    outcomes = run_checks(AGENTS[name], params, settings, engines=False)
    assert [o.check for o in outcomes] == [c.name for c in CHECKS]
    failed = [o.line() for o in outcomes if not o.passed]
    assert not failed, "\n".join(failed)


@pytest.mark.parametrize("name", LATENT_AR_AGENTS)
def test_the_latent_ar_family_passes_every_check_on_its_environment(name: str) -> None:
    env = ENVIRONMENTS["latent_ar"]
    settings = [Setting(env, env.Params(order=3, horizon=120))]
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


@dataclass
class HoarderParams:
    name: str = "hoarder"
    slots: int = 10**6


class Hoarder(UniformRandom):
    """A plugin-like agent that keeps ``slots`` floats per run (32 MB for the checks' four
    runs) and declares nothing: the default says a few KiB."""

    Params = HoarderParams

    def __init__(
        self, params: HoarderParams, problem: Problem, model: OfflineModel, rng: BatchRNG
    ) -> None:
        super().__init__(params, problem, model, rng)
        self.kept = np.zeros((problem.n_runs, params.slots))


class DeclaredHoarder(Hoarder):
    @classmethod
    def memory(cls, params: Any, sizes: Sizes) -> dict[str, int]:
        return {"agent.slots": 8 * sizes.n_runs * params.slots}


class MisnamedHoarder(Hoarder):
    @classmethod
    def memory(cls, params: Any, sizes: Sizes) -> dict[str, int]:
        return {"agent.n_slots": 8 * sizes.n_runs * params.slots}


@pytest.mark.parametrize(
    ("agent", "failure"),
    [
        (Hoarder, "memory(params, sizes) declares 2400 bytes for 4 runs of 120 rounds, but they "
         "allocated 320"),
        (MisnamedHoarder, "agent 'hoarder': memory(params, sizes) names 'agent.n_slots', not a "
         "config key of its own"),
        (DeclaredHoarder, None),
    ],
)  # fmt: skip
def test_a_declaration_far_below_what_the_agent_allocates_fails_the_memory_check(
    agent: type[Agent], failure: str | None
) -> None:
    outcomes = {o.check: o for o in run_checks(agent, HoarderParams(), default_settings())}
    assert [o.status for c, o in outcomes.items() if c != "memory"] == ["pass"] * (len(CHECKS) - 1)
    if failure is None:
        assert outcomes["memory"].status == "pass"
    else:
        assert outcomes["memory"].status == "FAIL"
        assert outcomes["memory"].detail.startswith(f"synthetic (dynamics=fixed, horizon=120, "
                                                    f"period=40): {failure}")  # fmt: skip
