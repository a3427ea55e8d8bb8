"""``nslb check`` compares the two engines for an agent both have: a default-engine agent
that plays otherwise than its JAX twin fails the check."""

from __future__ import annotations

import pytest

pytest.importorskip("jax")

from nslb_cli.agents import AGENTS  # noqa: E402
from nslb_cli.common.apart import run_apart  # noqa: E402
from nslb_cli.envs import ENVIRONMENTS  # noqa: E402
from nslb_cli.envs.synthetic import SyntheticParams  # noqa: E402
from nslb_cli.runner.conformance import Setting, engines_agree  # noqa: E402

SETTINGS = [Setting(ENVIRONMENTS["synthetic"], SyntheticParams(horizon=120, switch_prob=0.02))]


def test_an_agent_and_its_jax_twin_agree() -> None:
    outcome = run_apart(
        lambda: engines_agree(AGENTS["cd_ucb"], AGENTS["cd_ucb"].Params(), SETTINGS), "check"
    )
    assert outcome is not None and outcome.status == "pass", outcome


def test_an_agent_that_plays_otherwise_than_its_jax_twin_fails() -> None:
    outcome = run_apart(
        lambda: engines_agree(AGENTS["random"], AGENTS["cd_ucb"].Params(), SETTINGS), "check"
    )
    assert outcome is not None and outcome.status == "FAIL" and "(numpy) vs" in outcome.detail


def test_an_agent_the_jax_engine_does_not_run_has_no_such_check() -> None:
    assert engines_agree(AGENTS["d_ucb"], AGENTS["d_ucb"].Params(), SETTINGS) is None
