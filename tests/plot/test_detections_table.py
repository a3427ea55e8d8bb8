"""``nslb plot``'s table of how fast each change is found, from the seeds' records."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from nslb_cli.cli import main
from nslb_cli.envs.synthetic import SyntheticParams
from tests.helpers.results_tree import write_run

FIXED = SyntheticParams(dynamics="fixed", horizon=600)
NO_CHANGE = SyntheticParams(dynamics="markov", switch_prob=0.0, horizon=600)


def records(folder: Path) -> list[dict]:
    return [json.loads(path.read_text()) for path in sorted(folder.glob("seed=*.json"))]


def plotted(root: Path, out: Path, capsys: pytest.CaptureFixture[str]) -> str:
    main(["plot", str(root), "--out", str(out), "--format", "png", "--dpi", "40"])
    return capsys.readouterr().out


def test_the_table_gives_each_detecting_agents_means_over_its_seeds(tmp_path, capsys) -> None:
    cd = write_run(tmp_path / "e/cd_ucb", "cd_ucb", [0, 1, 2, 3], FIXED, name="e")
    write_run(tmp_path / "e/mts", "mts", [0, 1], FIXED, name="e")
    out = plotted(tmp_path, tmp_path / "figs", capsys)
    table = pd.read_csv(tmp_path / "figs/detections.csv").set_index("agent")
    assert list(table.index) == ["CD-UCB"], "agents that detect nothing are left out"
    seeds = records(cd)
    for stat in ("detections", "false_alarms", "missed_changes"):
        values = [seed[stat] for seed in seeds]
        assert table.loc["CD-UCB", f"{stat}_mean"] == pytest.approx(np.mean(values))
        assert table.loc["CD-UCB", f"{stat}_se"] == pytest.approx(
            np.std(values, ddof=1) / 2, abs=1e-12
        )
    delays = [seed["mean_delay"] for seed in seeds if seed["mean_delay"] is not None]
    assert table.loc["CD-UCB", "mean_delay_mean"] == pytest.approx(np.mean(delays))
    assert "## How fast changes are found" in out and "| CD-UCB | 4 |" in out
    assert (tmp_path / "figs/detections.md").read_text().count("| CD-UCB | 4 |") == 1


def test_without_a_true_change_every_alarm_is_false_and_no_delay_is_shown(tmp_path, capsys):
    folder = write_run(tmp_path / "e/cusum", "cusum_ucb", [0, 1, 2], NO_CHANGE, name="e")
    seeds = records(folder)
    assert all(seed["missed_changes"] == 0 and seed["mean_delay"] is None for seed in seeds)
    assert all(seed["false_alarms"] == seed["detections"] for seed in seeds)
    plotted(tmp_path, tmp_path / "figs", capsys)
    table = pd.read_csv(tmp_path / "figs/detections.csv").set_index("agent")
    alarms = np.mean([seed["detections"] for seed in seeds])
    assert table.loc["CUSUM-UCB", "false_alarms_mean"] == pytest.approx(alarms)
    assert "mean_delay_mean" not in table or table["mean_delay_mean"].isna().all()
    row = next(line for line in (tmp_path / "figs/detections.md").read_text().splitlines()
               if line.startswith("| CUSUM-UCB"))  # fmt: skip
    assert row.endswith("| – |")


def test_a_huge_recorded_count_does_not_stop_the_plot(tmp_path, capsys) -> None:
    folder = write_run(tmp_path / "e/cd_ucb", "cd_ucb", [0, 1], FIXED, name="e")
    path = folder / "seed=0.json"
    record = json.loads(path.read_text())
    record["false_alarms"] = 10**400  # a number no float holds: left out, as a missing one
    path.write_text(json.dumps(record))
    plotted(tmp_path, tmp_path / "figs", capsys)
    table = pd.read_csv(tmp_path / "figs/detections.csv").set_index("agent")
    assert table.loc["CD-UCB", "false_alarms_mean"] == records(folder)[1]["false_alarms"]
