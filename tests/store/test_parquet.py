"""Results in one Parquet file (run.format=parquet) and thinned rounds (run.every): the rows are
the CSV's, the cumulative columns sum every round, a sealed file does not depend on how its
batches came, and a file changed anywhere is never read as results."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from nslb_cli.bandit.trace import NO_BELIEF, Trace
from nslb_cli.plot.csvread import read_run
from nslb_cli.plot.parquetread import read_run as read_parquet
from nslb_cli.store import parquet
from nslb_cli.store.results import (
    COLUMNS,
    kept_rounds,
    seed_columns,
    seed_csv_bytes,
    write_trace,
)
from tests.helpers.agents import run_agent
from tests.helpers.results_tree import SMALL

H = SMALL.horizon  # 60
KEY = "0123456789abcdef"
ARRAYS = ("seeds", "action", "reward", "expected_reward", "optimal_reward", "state", "belief",
          "p_true_state")  # fmt: skip


@pytest.fixture(scope="module")
def traces() -> dict[str, Trace]:
    """umTS (a belief, a statistic) and random (no belief) on seeds 0 … 4."""
    return {agent: run_agent(agent, list(range(5)), SMALL) for agent in ("umts", "random")}


def runs(trace: Trace, first: int, stop: int) -> Trace:
    """The runs ``first … stop - 1`` of ``trace``: a batch of them."""
    arrays = {name: getattr(trace, name)[first:stop] for name in ARRAYS}
    summary = {name: values[first:stop] for name, values in trace.summary.items()}
    return Trace(**arrays, summary=summary)


def test_every_keeps_every_kth_round_and_the_last() -> None:
    cases = [
        (1, list(range(1, 11))),
        (3, [3, 6, 9, 10]),
        (5, [5, 10]),
        (10, [10]),
        (11, [10]),
        (10**18, [10]),
    ]
    for every, kept in cases:
        assert kept_rounds(10, every).tolist() == kept, every


def test_thinned_columns_sum_every_round_before_thinning(traces) -> None:
    trace = traces["umts"]
    full, thin = seed_columns(trace, 2), seed_columns(trace, 2, every=7)
    rows = kept_rounds(H, 7) - 1
    assert thin["t"].tolist() == (rows + 1).tolist()
    for column in COLUMNS:
        np.testing.assert_array_equal(thin[column], full[column][rows])
    np.testing.assert_array_equal(thin["cum_regret"], np.cumsum(trace.regret[2])[rows])


def test_a_thinned_csv_records_its_every_and_reads_back(tmp_path: Path, traces) -> None:
    trace = traces["umts"]
    write_trace(tmp_path / "all", trace, KEY)
    write_trace(tmp_path / "thin", trace, KEY, every=7)
    assert "every" not in json.loads((tmp_path / "all/seed=1.json").read_text())
    assert json.loads((tmp_path / "thin/seed=1.json").read_text())["every"] == 7
    assert (tmp_path / "all/seed=1.csv").read_bytes() == seed_csv_bytes(trace, 1)
    seeds = [(s, tmp_path / f"thin/seed={s}.csv") for s in range(5)]
    found, skipped = read_run(seeds, ["cum_regret"], horizon=H, key=KEY)
    assert skipped == [] and sorted(found) == list(range(5))
    assert found[3]["t"].tolist() == kept_rounds(H, 7).tolist()
    # A CSV whose record says every round, but that holds every 7th: incomplete.
    record = json.loads((tmp_path / "thin/seed=1.json").read_text())
    del record["every"]
    (tmp_path / "thin/seed=1.json").write_text(json.dumps(record))
    found, skipped = read_run(seeds, ["cum_regret"], horizon=H, key=KEY)
    assert sorted(found) == [0, 2, 3, 4] and "truncated: 9 rounds" in skipped[0].reason


def test_a_parquet_file_holds_the_csvs_rows_and_the_seed(tmp_path: Path, traces) -> None:
    """Every round kept, every 7th, and only the last (100 is past the horizon)."""
    for every in (1, 7, 100):
        for agent, trace in traces.items():
            check_parquet_file(tmp_path / f"{agent}-{every}", trace, every)


def check_parquet_file(folder: Path, trace, every: int) -> None:  # noqa: ANN001
    parquet.write_part(folder, trace, KEY, every)
    parquet.seal(folder, batch_size=100)
    assert sorted(p.name for p in folder.iterdir()) == [parquet.FILE]
    table = pq.read_table(folder / parquet.FILE).to_pandas()
    assert list(table.columns) == ["seed", *COLUMNS]
    for run, seed in enumerate(trace.seeds):
        rows = table[table["seed"] == seed]
        expected = seed_columns(trace, run, every)
        for column in COLUMNS:
            values = expected[column].astype(float)
            if column == "belief":  # null where the agent has no belief
                values[expected[column] == NO_BELIEF] = np.nan
            np.testing.assert_array_equal(rows[column].to_numpy(float), values, column)
    record = parquet.stored(folder)[0][0]
    assert record.seeds == list(range(5)) and record.every == every
    assert record.stats == {k: v.tolist() for k, v in trace.summary.items()}


def test_the_sealed_file_does_not_depend_on_how_its_batches_came(tmp_path: Path, traces) -> None:
    """Batches of any size, in any order, sealed once or after a stop: the same bytes."""
    trace = traces["umts"]
    histories = {
        "whole": [[(0, 2), (2, 4), (4, 5)]],
        "stopped": [[(0, 1), (1, 3)], [(3, 5)]],  # sealed, then resumed with more seeds
        "reversed": [[(3, 5), (0, 3)]],
    }
    for name, invocations in histories.items():
        for batches in invocations:
            for first, stop in batches:
                parquet.write_part(tmp_path / name, runs(trace, first, stop), KEY, every=3)
            parquet.seal(tmp_path / name, batch_size=2)
    whole = (tmp_path / "whole" / parquet.FILE).read_bytes()
    for name in histories:
        assert (tmp_path / name / parquet.FILE).read_bytes() == whole, name
        assert not (tmp_path / name / parquet.PARTS).exists()
    assert pq.ParquetFile(tmp_path / "whole" / parquet.FILE).metadata.num_row_groups == 3


def test_a_seed_in_a_part_and_the_sealed_file_is_read_once(tmp_path: Path, traces) -> None:
    """A stop between the seal's rename and the parts' removal leaves both."""
    trace = traces["umts"]
    parquet.write_part(tmp_path, runs(trace, 0, 3), KEY, every=1)
    part = next((tmp_path / parquet.PARTS).iterdir())
    kept = part.read_bytes()
    parquet.seal(tmp_path, batch_size=100)
    (tmp_path / parquet.PARTS).mkdir()
    part.write_bytes(kept)
    found, skipped = read_parquet(tmp_path, ["cum_regret"], H, KEY)
    assert sorted(found) == [0, 1, 2] and skipped == []
    np.testing.assert_array_equal(parquet.final_values(tmp_path, [2, 0], "cum_regret"),
                                  np.cumsum(trace.regret[[2, 0]], axis=1)[:, -1])  # fmt: skip


def fuzz_positions(size: int) -> list[int]:
    """Every byte of a small file's first and last 600 (the footer), and 300 between."""
    middle = np.random.default_rng(0).choice(np.arange(600, size - 600), 300, replace=False)
    return sorted({*range(600), *range(size - 600, size), *middle.tolist()})


def test_a_file_changed_anywhere_or_cut_is_never_read(tmp_path: Path, traces) -> None:
    parquet.write_part(tmp_path, traces["umts"], KEY, 1)
    parquet.seal(tmp_path, batch_size=100)
    path = tmp_path / parquet.FILE
    whole = path.read_bytes()
    changed = [
        whole[:i] + bytes([whole[i] ^ 0x10]) + whole[i + 1 :] for i in fuzz_positions(len(whole))
    ]
    for damaged in [*changed, whole[:-1], whole[: len(whole) // 2], b"", whole + b"\n"]:
        path.write_bytes(damaged)
        records, problems = parquet.stored(tmp_path)
        assert records == [] and list(problems) == [path], problems
        assert len(problems[path].splitlines()) == 1
        assert read_parquet(tmp_path, ["cum_regret"], H, KEY)[0] == {}


def test_a_parquet_file_nslb_did_not_write_is_not_read(tmp_path: Path, traces) -> None:
    table = parquet.batch_table(traces["random"])
    pq.write_table(table, tmp_path / parquet.FILE)
    records, problems = parquet.stored(tmp_path)
    assert records == [] and "not nslb's results" in problems[tmp_path / parquet.FILE]


def test_a_failed_part_leaves_no_file(tmp_path: Path, traces) -> None:
    (tmp_path / parquet.PARTS / "seeds=0-4.parquet").mkdir(parents=True)  # rename onto a folder
    with pytest.raises(OSError):
        parquet.write_part(tmp_path, traces["umts"], KEY, 1)
    assert [p.name for p in (tmp_path / parquet.PARTS).iterdir()] == ["seeds=0-4.parquet"]


def test_a_trace_of_float32_values_is_stored_as_float32(tmp_path: Path, traces) -> None:
    trace = traces["random"]
    narrow = dataclasses.replace(trace, reward=trace.reward.astype(np.float32))
    table = parquet.batch_table(narrow)
    assert str(table.schema.field("reward").type) == "float"
