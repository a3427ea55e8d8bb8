"""Helpers for the plot tests: write run folders exactly as ``nslb run`` lays them out."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from nslb_cli.envs.synthetic import SyntheticParams
from nslb_cli.results import claim_folder, write_trace
from tests.conftest import agent_params, run_agent

SMALL = SyntheticParams(horizon=60, period=20, switch_prob=0.05)


def write_run(
    folder: Path,
    agent: str,
    seeds: list[int],
    env: SyntheticParams = SMALL,
    name: str = "exp",
    **agent_overrides: object,
) -> Path:
    """Simulate ``agent`` on ``seeds`` and write config.yaml and seed=K.csv/json to ``folder``."""
    config = {
        "env": asdict(env),
        "agent": asdict(agent_params(agent, **agent_overrides)),
        "name": name,
        "run": {"seed": min(seeds), "n_seeds": len(seeds), "batch_size": 100, "progress": None},
    }
    claim_folder(folder, config)
    write_trace(folder, run_agent(agent, seeds, env, **agent_overrides))
    return folder
