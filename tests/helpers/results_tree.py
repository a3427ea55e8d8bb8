"""Helpers for the plot tests: write run folders exactly as ``nslb run`` lays them out.

``write_run`` simulates an agent (real results); ``write_fake_run`` writes seed CSVs
of made-up values under any config (MovieLens configs, data records, many agents), which is
all the plot pipeline looks at.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from nslb_cli.bandit.trace import NO_BELIEF, Trace
from nslb_cli.envs.synthetic import SyntheticParams
from nslb_cli.store.folder import claim, result_key
from nslb_cli.store.results import COLUMNS, seed_columns, write_trace
from tests.helpers.agents import agent_params, run_agent

SMALL = SyntheticParams(horizon=60, period=20, switch_prob=0.05)
MOVIELENS_ENV = {
    "name": "movielens",
    "release": "ml-1m",
    "data_dir": None,
    "cache_dir": None,
    "min_user_ratings": 200,
    "min_item_ratings": 200,
    "horizon": 40,
}


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
    folder.mkdir(parents=True, exist_ok=True)
    claim(folder, config)
    write_trace(folder, run_agent(agent, seeds, env, **agent_overrides), result_key(config))
    return folder


def fake_config(name: str, env: dict[str, Any], agent: str, **agent_settings: Any) -> dict:
    """A resolved config as config.yaml holds it."""
    return {
        "env": dict(env),
        "agent": {"name": agent, **agent_settings},
        "name": name,
        "run": {"seed": 0, "n_seeds": 1, "batch_size": 100, "progress": None},
    }


def write_fake_run(
    folder: Path,
    config: dict[str, Any],
    seeds: list[int],
    level: float = 0.5,
    data: dict[str, Any] | None = None,
) -> Path:
    """config.yaml (and ``data.json`` when ``data`` is given) and a seed CSV per seed whose
    regret per round is about ``level`` (the reward ``1 - level``), made up from the seed."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    if data is not None:
        (folder / "data.json").write_text(json.dumps(data))
    horizon = config["env"]["horizon"]
    for seed in seeds:
        fake_csv(folder / f"seed={seed}.csv", horizon, seed, level)
    return folder


def fake_csv(path: Path, horizon: int, seed: int, level: float = 0.5) -> pd.DataFrame:
    """Write a valid seed CSV of ``horizon`` rounds; return its table."""
    rng = np.random.default_rng(seed)
    regret = np.clip(level + 0.1 * rng.standard_normal(horizon), 0, None)
    reward = 1 - level + 0.1 * rng.standard_normal(horizon)
    table = pd.DataFrame(
        {
            "t": np.arange(1, horizon + 1),
            "action": rng.integers(0, 5, horizon),
            "reward": reward,
            "expected_reward": reward,
            "optimal_reward": reward + regret,
            "regret": regret,
            "cum_regret": np.cumsum(regret),
            "cum_reward": np.cumsum(reward),
            "state": rng.integers(0, 5, horizon),
            "belief": pd.array([None] * horizon, dtype="Int64"),
            "p_true_state": np.full(horizon, np.nan),
        },
        columns=COLUMNS,
    )
    table.to_csv(path, index=False)
    return table


def edited_by_hand(csv: Path) -> None:
    """Drop nslb's integrity record of ``csv`` (in ``seed=K.json``): the CSV is then taken
    as a hand-made file, as a user who edits results on purpose would do."""
    stats = csv.with_suffix(".json")
    record = json.loads(stats.read_text())
    record.pop("csv")
    stats.write_text(json.dumps(record))


def seed_frame(trace: Trace, run: int) -> pd.DataFrame:
    """The CSV table of one run as pandas: ``belief`` nullable ``Int64``, NA without a belief."""
    columns: dict[str, Any] = seed_columns(trace, run)
    belief = columns["belief"]
    columns["belief"] = pd.array(np.where(belief == NO_BELIEF, None, belief), dtype="Int64")
    return pd.DataFrame(columns, columns=COLUMNS)
