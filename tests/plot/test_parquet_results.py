"""Plots and frames of Parquet results and thinned rounds: the same values as the CSVs, the
rounds present used as they are, and folders that cannot be compared round by round (another
run.every in one run, both formats in one folder, an END between kept rounds) named in one
line."""

from __future__ import annotations

import warnings
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from nslb_cli.bandit.trace import kept_rounds
from nslb_cli.plot import tidy
from nslb_cli.plot.notebook import load_results, summarise
from nslb_cli.store import parquet
from nslb_cli.store.folder import read_config, result_key
from nslb_cli.store.results import Layout
from nslb_cli.store.run_folder import RunFolder
from tests.helpers.agents import agent_params, run_agent
from tests.helpers.results_tree import SMALL

H = SMALL.horizon  # 60


def write(folder: Path, agent: str, seeds: list[int], layout: Layout) -> Path:
    """Simulate ``agent`` on ``seeds`` and store them in ``folder`` as ``layout`` says."""
    config = {"env": asdict(SMALL), "agent": asdict(agent_params(agent)), "name": "exp",
              "run": {"seed": min(seeds), "n_seeds": len(seeds), "format": layout.format,
                      "every": layout.every}}  # fmt: skip
    with RunFolder(folder, config, None, layout, batch_size=100).open() as run:
        run.write(np.array(seeds), run_agent(agent, seeds, SMALL))
        run.seal()
    return folder


def test_parquet_results_load_as_their_csvs(tmp_path: Path) -> None:
    write(tmp_path / "csv/mts", "mts", [0, 1, 2], Layout())
    write(tmp_path / "parquet/mts", "mts", [0, 1, 2], Layout("parquet"))
    columns = ["cum_regret", "p_true_state", "reward"]
    read = [tidy.load(tmp_path / kind, columns) for kind in ("csv", "parquet")]
    assert read[0].skipped == read[1].skipped == []
    assert read[0].frame.equals(read[1].frame)
    assert read[0].seed_stats.equals(read[1].seed_stats)


@pytest.mark.parametrize("layout", [Layout(), Layout("parquet")], ids=["csv", "parquet"])
def test_seeds_beyond_32_bits_are_read_as_they_are(layout: Layout, tmp_path: Path) -> None:
    seeds = [2**32, 2**63 - 1]  # run.seed takes any int64
    write(tmp_path / "mts", "mts", seeds, layout)
    loaded = tidy.load(tmp_path, ["cum_regret"])
    assert loaded.skipped == []
    assert sorted(set(loaded.frame["seed"].tolist())) == seeds
    assert sorted(loaded.seed_stats["seed"].tolist()) == seeds
    assert sorted(set(load_results(tmp_path)["seed"].tolist())) == seeds


@pytest.mark.parametrize(
    "when", [0, 1, 2], ids=["before-the-first-file", "between-files", "before-the-statistics"]
)
def test_a_folder_sealed_while_it_is_read_is_read_whole(when: int, tmp_path, monkeypatch):
    """A job seals its parts into results.parquet while a reader reads them (readers take
    no lock): the reader lists the folder again, and reads every seed and statistic."""
    folder = write(tmp_path / "cd_ucb", "cd_ucb", [0, 1, 2], Layout("parquet"))
    whole = tidy.load(tmp_path, ["cum_regret"])
    key = result_key(read_config(folder))
    (folder / parquet.FILE).unlink()
    for seeds in ([0, 1], [2]):  # a stopped job's two parts, not sealed
        parquet.write_part(folder, run_agent("cd_ucb", seeds, SMALL), key, every=1)
    read_columns, calls = parquet.read_columns, []

    def sealing_meanwhile(record, columns):
        calls.append(record.path)
        if len(calls) == when + 1:
            parquet.seal(folder, batch_size=100)
        return read_columns(record, columns)

    monkeypatch.setattr(parquet, "read_columns", sealing_meanwhile)
    seed_stats = tidy._seed_stats

    def sealing_before(runs):
        parquet.seal(folder, batch_size=100)  # the parts read are gone: their stats too
        return seed_stats(runs)

    if when == 2:
        monkeypatch.setattr(tidy, "_seed_stats", sealing_before)
    loaded = tidy.load(tmp_path, ["cum_regret"])
    assert loaded.skipped == [] and not (folder / parquet.PARTS).exists()
    assert loaded.frame.equals(whole.frame)
    assert "detections" in whole.seed_stats and loaded.seed_stats.equals(whole.seed_stats)


def test_a_folder_that_changes_at_every_read_is_skipped_in_one_line(tmp_path, monkeypatch):
    write(tmp_path / "mts", "mts", [0, 1], Layout("parquet"))

    def always_changed(record, columns):
        raise parquet.Changed("changed while it was read; read it again")

    monkeypatch.setattr(parquet, "read_columns", always_changed)
    loaded = tidy.load(tmp_path, ["cum_regret"])
    assert loaded.frame.empty
    (line,) = [str(s) for s in loaded.skipped]
    assert "changed while it was read, again and again" in line, line


def forged(folder: Path, change) -> None:
    """``folder``'s results.parquet written again, whole and sealed, after ``change(table,
    record)``: what another program (or another build of nslb's) could write."""
    import pyarrow.parquet as pq

    path = folder / parquet.FILE
    with path.open("rb") as handle:
        old = parquet.read_record(handle, path)
    record = {"config": old.key, "every": old.every, "seeds": old.seeds, "stats": old.stats}
    table, record = change(pq.read_table(path).replace_schema_metadata(None), record)
    parquet._write(path, [table], record)


def without_a_column(table, record):
    return table.drop(["cum_reward"]), record


def with_a_seed_twice(table, record):
    rows = table.num_rows // len(record["seeds"])
    first = table.slice(0, rows)
    seeds, stats = record["seeds"], record["stats"]
    return pa.concat_tables([first, table]), {**record, "seeds": [seeds[0], *seeds],
            "stats": {k: [v[0], *v] for k, v in stats.items()}}  # fmt: skip


@pytest.mark.parametrize(
    ("change", "said"),
    [(without_a_column, "cum_reward"), (with_a_seed_twice, "names a seed twice")],
    ids=["a-column-missing", "a-seed-twice"],
)
def test_a_whole_file_of_other_columns_or_seeds_is_skipped_in_one_line(
    change, said: str, tmp_path: Path
) -> None:
    forged(write(tmp_path / "mts", "mts", [0, 1, 2], Layout("parquet")), change)
    loaded = tidy.load(tmp_path, ["cum_regret", "cum_reward"])
    assert loaded.frame.empty
    (line,) = [str(s) for s in loaded.skipped]
    assert "results.parquet" in line and said in line, line


def test_thinned_results_are_plotted_at_the_rounds_kept(tmp_path: Path) -> None:
    write(tmp_path / "mts", "mts", [0, 1, 2], Layout("parquet", 7))
    write(tmp_path / "random", "random", [0, 1, 2], Layout("csv", 4))
    frame = load_results(tmp_path)
    rounds = frame.groupby("agent", observed=True)["t"].unique()
    assert rounds["mTS"].tolist() == kept_rounds(H, 7).tolist()
    assert rounds["Random"].tolist() == kept_rounds(H, 4).tolist()
    summary = summarise(frame, reference="mTS")
    assert summary["final_t"].tolist() == [H, H] and summary["n_pairs"].tolist() == [3, 3]
    with pytest.raises(ValueError, match="END 30 is not a round that .* kept"):
        load_results(tmp_path, rounds=30)  # between rounds 28 and 35 of mTS
    assert load_results(tmp_path, rounds=28)["t"].max() == 28  # kept by both


def test_a_run_of_two_every_keeps_one_and_names_the_other(tmp_path: Path) -> None:
    write(tmp_path / "a", "mts", [0, 1], Layout())
    write(tmp_path / "b", "mts", [2, 3], Layout("parquet", 5))
    loaded = tidy.load(tmp_path, ["cum_regret"])
    assert sorted(loaded.frame["seed"].unique()) == [0, 1]
    (line,) = [str(s) for s in loaded.skipped]
    assert "seeds 2–3 keep 12 rounds of 60" in line and "run.every" in line


def test_a_folder_of_both_formats_is_skipped_in_one_line(tmp_path: Path) -> None:
    write(tmp_path / "r", "mts", [0, 1], Layout())
    write(tmp_path / "r", "mts", [2], Layout("parquet"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(ValueError, match="no readable results"):
            load_results(tmp_path)
    (said,) = [str(w.message) for w in caught]
    assert "results.parquet: beside seed=K.csv files" in said


def test_a_parquet_file_of_another_config_is_skipped(tmp_path: Path) -> None:
    folder = write(tmp_path / "r", "mts", [0, 1], Layout("parquet"))
    text = (folder / "config.yaml").read_text().replace("n_arms: 5", "n_arms: 6")
    (folder / "config.yaml").write_text(text)
    loaded = tidy.load(tmp_path, ["cum_regret"])
    assert loaded.frame.empty
    (line,) = loaded.skipped
    assert line.path.name == "config.yaml" and line.reason == tidy.CONTRADICTED


def test_a_part_of_another_config_beside_the_folders_file_is_named(tmp_path: Path) -> None:
    """Seeds of the folder's key are kept; the file of another key is named in one line."""
    folder = write(tmp_path / "r", "mts", [0, 1], Layout("parquet"))
    parquet.write_part(folder, run_agent("mts", [2], SMALL), "another key", every=1)
    loaded = tidy.load(tmp_path, ["cum_regret"])
    assert sorted(loaded.frame["seed"].unique()) == [0, 1]
    (line,) = loaded.skipped
    assert line.path.name == "seeds=2-2.parquet" and "written for another config" in line.reason
