"""The tidy loader: an outputs tree -> one table, bad files reported by path and skipped."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from nslb_cli.plot.tidy import load, read_seed
from tests.results_tree import SMALL, write_run

H = SMALL.horizon


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """mts (seeds 0-2) and umts (seeds 0-1) of experiment 'exp', like a sweep folder."""
    write_run(tmp_path / "exp/synthetic/mts", "mts", [0, 1, 2])
    write_run(tmp_path / "exp/synthetic/umts", "umts", [0, 1], num_particles=20)
    return tmp_path


def test_rows_and_config_columns(tree: Path) -> None:
    loaded = load(tree)
    frame = loaded.frame
    assert loaded.skipped == [] and loaded.n_files == 5
    assert len(frame) == 5 * H
    assert {"name", "env.dynamics", "env.horizon", "agent.name", "agent.num_particles"} <= set(
        loaded.config_columns
    )
    assert not any(column.startswith("run.") for column in frame.columns), "run section is left out"
    per_agent = frame.groupby("agent.name", observed=True)["seed"].unique()
    assert sorted(per_agent["mts"]) == [0, 1, 2] and sorted(per_agent["umts"]) == [0, 1]
    umts = frame[frame["agent.name"] == "umts"]
    assert set(umts["agent.num_particles"]) == {20}
    assert frame.loc[frame["agent.name"] == "mts", "agent.num_particles"].isna().all()
    assert (frame["name"] == "exp").all()


def test_values_match_the_csv_and_dtypes_are_compact(tree: Path) -> None:
    frame = load(tree, columns=["cum_regret", "reward"]).frame
    csv = pd.read_csv(tree / "exp/synthetic/umts/seed=1.csv")
    rows = frame[(frame["agent.name"] == "umts") & (frame["seed"] == 1)]
    np.testing.assert_array_equal(rows["t"], np.arange(1, H + 1))
    np.testing.assert_allclose(rows["cum_regret"], csv["cum_regret"], rtol=1e-6)
    np.testing.assert_allclose(rows["reward"], csv["reward"], rtol=1e-6, atol=1e-6)
    assert rows["cum_regret"].dtype == np.float32 and rows["t"].dtype == np.int32
    assert isinstance(frame["agent.name"].dtype, pd.CategoricalDtype)
    assert "cum_reward" not in frame, "only the columns asked for are read"


def test_runs_table_has_one_row_per_folder(tree: Path) -> None:
    loaded = load(tree)
    assert sorted(loaded.runs["folder"]) == ["exp/synthetic/mts", "exp/synthetic/umts"]
    mts_run = loaded.runs.index[loaded.runs["agent.name"] == "mts"][0]
    assert set(loaded.frame.loc[loaded.frame["run"] == mts_run, "agent.name"]) == {"mts"}


def test_truncated_and_malformed_csvs_are_skipped_by_path(tree: Path) -> None:
    folder = tree / "exp/synthetic/mts"
    lines = (folder / "seed=0.csv").read_text().splitlines(keepends=True)
    (folder / "seed=0.csv").write_text("".join(lines[:-5]))  # rounds missing
    lines = (folder / "seed=1.csv").read_text().splitlines(keepends=True)
    (folder / "seed=1.csv").write_text("".join(lines[:-1]) + lines[-1][:8])  # cut mid-line
    (tree / "exp/synthetic/umts/seed=1.csv").write_text("t,cum_regret\nnot,a number\n")
    loaded = load(tree)
    reasons = {skip.path: skip.reason for skip in loaded.skipped}
    assert set(reasons) == {
        folder / "seed=0.csv",
        folder / "seed=1.csv",
        tree / "exp/synthetic/umts/seed=1.csv",
    }
    assert (
        reasons[folder / "seed=0.csv"]
        == f"truncated: {H - 5} rounds, its config says env.horizon={H}"
    )
    assert "missing values" in reasons[folder / "seed=1.csv"]
    assert all("\n" not in str(skip) and str(skip.path) in str(skip) for skip in loaded.skipped)
    kept = loaded.frame.groupby("agent.name", observed=True)["seed"].unique()
    assert sorted(kept["mts"]) == [2] and sorted(kept["umts"]) == [0]


def test_missing_config_skips_the_folder_with_its_path(tree: Path) -> None:
    (tree / "exp/synthetic/umts/config.yaml").unlink()
    loaded = load(tree)
    assert [skip.path for skip in loaded.skipped] == [tree / "exp/synthetic/umts/config.yaml"]
    assert set(loaded.frame["agent.name"]) == {"mts"}


def test_read_seed_names_the_problem(tmp_path: Path) -> None:
    path = tmp_path / "seed=0.csv"
    path.write_text("t,cum_regret\n1,0.5\n2,0.7\n")
    assert list(read_seed(path, ["cum_regret"], horizon=2)["cum_regret"]) == pytest.approx(
        [0.5, 0.7]
    )
    with pytest.raises(ValueError, match="truncated: 2 rounds.*horizon=3"):
        read_seed(path, ["cum_regret"], horizon=3)
    path.write_text("t,cum_regret\n1,0.5\n3,0.7\n")
    with pytest.raises(ValueError, match="rounds 1"):
        read_seed(path, ["cum_regret"], horizon=None)
    path.write_text("t,reward\n1,0.5\n")
    with pytest.raises(ValueError, match="unreadable"):
        read_seed(path, ["cum_regret"], horizon=None)
    path.write_text("t,cum_regret\n1,\n")
    with pytest.raises(ValueError, match="missing values in column cum_regret"):
        read_seed(path, ["cum_regret"], horizon=None)


def test_other_column_orders_load_through_the_slow_path(tree: Path) -> None:
    path = tree / "exp/synthetic/mts/seed=2.csv"
    original = pd.read_csv(path)
    original[original.columns[::-1]].to_csv(path, index=False)
    frame = load(tree).frame
    rows = frame[(frame["agent.name"] == "mts") & (frame["seed"] == 2)]
    np.testing.assert_allclose(rows["cum_regret"], original["cum_regret"], rtol=1e-6)


def test_hidden_folders_and_empty_trees(tmp_path: Path) -> None:
    assert load(tmp_path).frame.empty and load(tmp_path).n_files == 0
    write_run(tmp_path / ".hydra/x", "random", [0])
    assert load(tmp_path).n_files == 0, "hidden folders (Hydra's .hydra) are not walked"
