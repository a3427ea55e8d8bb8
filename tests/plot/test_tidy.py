"""The tidy loader: an outputs tree -> one table, bad files reported by path and skipped."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from nslb_cli.plot.csvread import read_seed
from nslb_cli.plot.tidy import load
from nslb_cli.store.results import COLUMNS
from tests.helpers.results_tree import (
    SMALL,
    edited_by_hand,
    fake_config,
    write_fake_run,
    write_run,
)

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


def test_values_are_the_doubles_of_the_csv(tree: Path) -> None:
    frame = load(tree, columns=["cum_regret", "reward"]).frame
    csv = pd.read_csv(tree / "exp/synthetic/umts/seed=1.csv")
    rows = frame[(frame["agent.name"] == "umts") & (frame["seed"] == 1)]
    np.testing.assert_array_equal(rows["t"], np.arange(1, H + 1))
    np.testing.assert_array_equal(rows["cum_regret"], csv["cum_regret"])
    np.testing.assert_array_equal(rows["reward"], csv["reward"])
    assert rows["cum_regret"].dtype == np.float64 and rows["t"].dtype == np.int32
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
    assert reasons[folder / "seed=1.csv"].startswith("truncated: its last line is cut off")
    assert all("\n" not in str(skip) and str(skip.path) in str(skip) for skip in loaded.skipped)
    kept = loaded.frame.groupby("agent.name", observed=True)["seed"].unique()
    assert sorted(kept["mts"]) == [2] and sorted(kept["umts"]) == [0]


def test_missing_config_skips_the_folder_with_its_path(tree: Path) -> None:
    (tree / "exp/synthetic/umts/config.yaml").unlink()
    loaded = load(tree)
    assert [skip.path for skip in loaded.skipped] == [tree / "exp/synthetic/umts/config.yaml"]
    assert set(loaded.frame["agent.name"]) == {"mts"}


def test_a_config_its_seeds_contradict_skips_the_folder_in_one_line(tree: Path) -> None:
    """config.yaml edited (or cut short) and a seed without its record: the seeds that have
    records name another config, so config.yaml is wrong; no group is made from it (the
    recordless seed included), and one line says so instead of one per seed."""
    folder = tree / "exp/synthetic/umts"
    whole = (folder / "config.yaml").read_text()
    assert "  sigma: 0.5\n" in whole
    (folder / "config.yaml").write_text(whole.replace("  sigma: 0.5\n", "  sigma: 0.7\n"))
    (folder / "seed=1.json").unlink()
    loaded = load(tree)
    assert [skip.path for skip in loaded.skipped] == [folder / "config.yaml"]
    assert "its seeds record another config" in loaded.skipped[0].reason
    assert set(loaded.frame["agent.name"]) == {"mts"} and len(loaded.runs) == 1
    (folder / "config.yaml").write_text(whole)  # as the next run of the command restores it
    again = load(tree)
    assert again.skipped == [] and set(again.frame["agent.name"]) == {"mts", "umts"}


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
    edited_by_hand(path)
    frame = load(tree).frame
    rows = frame[(frame["agent.name"] == "mts") & (frame["seed"] == 2)]
    np.testing.assert_allclose(rows["cum_regret"], original["cum_regret"], rtol=1e-6)


def test_hidden_folders_and_empty_trees(tmp_path: Path) -> None:
    assert load(tmp_path).frame.empty and load(tmp_path).n_files == 0
    write_run(tmp_path / ".hydra/x", "random", [0])
    assert load(tmp_path).n_files == 0, "hidden folders (Hydra's .hydra) are not walked"


def test_any_valid_csv_layout_is_read(tmp_path: Path) -> None:
    """Quoted header, CRLF line ends, shuffled columns, other float formats, empty fields,
    no final newline: the values are the same."""
    config = fake_config("e", {"name": "synthetic", "horizon": 30}, "mts")
    folder = write_fake_run(tmp_path / "e/mts", config, [0, 1, 2, 3, 4])
    original = pd.read_csv(folder / "seed=0.csv")
    text = (folder / "seed=0.csv").read_text()
    (folder / "seed=1.csv").write_text(text.replace("\n", "\r\n"))
    quoted = ",".join(f'"{c}"' for c in COLUMNS)
    (folder / "seed=2.csv").write_text(quoted + text[text.index("\n") :])
    shuffled = pd.read_csv(folder / "seed=3.csv")
    shuffled[list(reversed(COLUMNS))].to_csv(
        folder / "seed=3.csv", index=False, float_format="%.17e"
    )
    (folder / "seed=4.csv").write_text(text.rstrip("\n"))
    frame = load(tmp_path, columns=["cum_regret", "belief"]).frame
    assert sorted(frame["seed"].unique()) == [0, 1, 2, 3, 4]
    for seed in (1, 2, 4):
        rows = frame[frame["seed"] == seed]
        np.testing.assert_allclose(rows["cum_regret"], original["cum_regret"], rtol=1e-6)
        assert rows["belief"].isna().all(), "empty belief fields are NaN"
    rows = frame[frame["seed"] == 3]
    np.testing.assert_allclose(rows["cum_regret"], shuffled["cum_regret"], rtol=1e-6)


def test_folders_of_equal_configs_are_one_run(tmp_path: Path) -> None:
    """`agent=umts` and `agent=umts agent.num_particles=100` (its default): one run."""
    plain = write_run(tmp_path / "exp/synthetic/umts", "umts", [0, 1])
    default = write_run(tmp_path / "exp/synthetic/umts/agent.num_particles=100", "umts", [1, 2])
    loaded = load(tmp_path)
    assert len(loaded.runs) == 1
    assert loaded.runs.loc[0, "folder"] == (
        "exp/synthetic/umts; exp/synthetic/umts/agent.num_particles=100"
    )
    assert sorted(loaded.frame["seed"].unique()) == [0, 1, 2]
    assert len(loaded.frame) == 3 * H, "seed 1 once"
    (skip,) = loaded.skipped
    assert skip.path == default and skip.reason.startswith(f"seed 1 is also in {plain}, ")
