"""Shared test helpers: small synthetic worlds and agents built as the CLI builds them."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from nslb_cli.agents import AGENTS
from nslb_cli.envs.synthetic import Synthetic, SyntheticParams
from nslb_cli.runner.compose import RunConfig, RunSettings
from nslb_cli.runner.job import simulate_seeds
from nslb_cli.runner.simulate import Trace

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


def agent_params(name: str, **overrides: object) -> object:
    """Default parameters of agent ``name`` with ``overrides``."""
    return replace(AGENTS[name].Params(), **overrides)


def run_agent(
    agent: str,
    seeds: np.ndarray | list[int],
    env: SyntheticParams | None = None,
    **agent_overrides: object,
) -> Trace:
    """Simulate ``agent`` on the synthetic env for ``seeds`` (one batch), as a job would."""
    config = RunConfig(
        name="test",
        env=env or SyntheticParams(),
        agent=agent_params(agent, **agent_overrides),
        run=RunSettings(seed=0, n_seeds=1, progress=False),
    )
    return simulate_seeds(config, np.asarray(seeds))


@pytest.fixture
def small_env() -> SyntheticParams:
    return SyntheticParams(horizon=150, period=50, switch_prob=0.02)


def synthetic_world(seeds: list[int], **env: object):
    return Synthetic.build(SyntheticParams(**env), np.asarray(seeds))
