"""Agents built and run as the CLI builds them, on the synthetic environment."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from nslb_cli.agents import AGENTS
from nslb_cli.envs.synthetic import SyntheticParams
from nslb_cli.runner.compose import RunConfig, RunSettings
from nslb_cli.runner.job import simulate_seeds
from nslb_cli.runner.simulate import Trace


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
