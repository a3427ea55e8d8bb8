"""Run folders written by hand: seed CSVs of chosen decimal values, statistics, trial files.

Every number here is a short decimal, so a test can state what a table must say exactly.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from nslb_cli.store.results import COLUMNS

SYNTHETIC = {"name": "synthetic", "dynamics": "fixed", "horizon": 4}


def config(name: str, agent: str, env: dict[str, Any] | None = None, **settings: Any) -> dict:
    """A resolved config as ``config.yaml`` holds it."""
    return {
        "env": dict(env or SYNTHETIC),
        "agent": {"name": agent, **settings},
        "name": name,
        "run": {"seed": 0, "n_seeds": 1, "batch_size": 100, "progress": None},
    }


def write_seed(
    folder: Path,
    seed: int,
    horizon: int,
    final_regret: float,
    final_reward: float,
    stats: dict[str, Any] | None = None,
) -> None:
    """``seed=K.csv`` whose cumulative regret and reward grow to ``final_regret`` and
    ``final_reward`` at round ``horizon`` (earlier rounds: that share of them, 3 decimals),
    and ``seed=K.json`` with ``stats`` (statistics only: no integrity record) when given."""
    lines = [",".join(COLUMNS)]
    for t in range(1, horizon + 1):
        share = t / horizon
        regret = final_regret if t == horizon else round(final_regret * share, 3)
        reward = final_reward if t == horizon else round(final_reward * share, 3)
        row = {
            "t": t,
            "action": 0,
            "reward": 0.5,
            "expected_reward": 0.5,
            "optimal_reward": 1.0,
            "regret": 0.5,
            "cum_regret": regret,
            "cum_reward": reward,
            "state": 0,
            "belief": "",
            "p_true_state": "",
        }
        lines.append(",".join(str(row[c]) for c in COLUMNS))
    (folder / f"seed={seed}.csv").write_text("\n".join(lines) + "\n")
    if stats is not None:
        (folder / f"seed={seed}.json").write_text(json.dumps({"seed": seed, **stats}))


def write_run(
    folder: Path,
    run_config: dict[str, Any],
    finals: dict[int, tuple[float, float]],
    stats: dict[int, dict[str, Any]] | None = None,
) -> Path:
    """``config.yaml`` and one seed per entry of ``finals`` (seed -> final regret, reward)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.yaml").write_text(yaml.safe_dump(run_config, sort_keys=False))
    horizon = run_config["env"]["horizon"]
    for seed, (regret, reward) in finals.items():
        write_seed(folder, seed, horizon, regret, reward, (stats or {}).get(seed))
    return folder


def write_trial(
    folder: Path,
    number: int,
    params: dict[str, Any],
    objective: float | None,
    direction: str = "minimize",
    metric: str = "final cum_regret",
) -> Path:
    """``<folder>/.nslb-study/<number>.json``, as a search records a trial."""
    study = folder / ".nslb-study"
    study.mkdir(parents=True, exist_ok=True)
    overrides = [f"{key}={value}" for key, value in params.items()]
    record = {
        "trial": number,
        "overrides": overrides,
        "params": params,
        "objective": objective,
        "metric": metric,
        "direction": direction,
    }
    path = study / f"{number}.json"
    path.write_text(json.dumps(record))
    return path
