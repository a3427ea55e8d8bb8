"""The per-seed CSVs as written: header, values that read back, empty belief, atomic files."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from nslb_cli.bandit.trace import NO_BELIEF
from nslb_cli.plot.csvread import read_run
from nslb_cli.store.results import (
    COLUMNS,
    HEADER,
    INTEGERS,
    arrow_text,
    seed_columns,
    seed_csv_bytes,
    write_trace,
)
from tests.helpers.agents import run_agent
from tests.helpers.results_tree import SMALL, seed_frame

H = SMALL.horizon
KEY = "0123456789abcdef"  # a result key (store.folder.result_key)
FLOATS = ("reward", "expected_reward", "optimal_reward", "regret", "cum_regret", "cum_reward")


@pytest.fixture(scope="module")
def traces():
    """An agent with a belief (mts) and one without (random), seeds 3 and 4."""
    return {agent: run_agent(agent, [3, 4], SMALL) for agent in ("mts", "random")}


def test_written_csv_reads_back_to_the_trace(tmp_path: Path, traces) -> None:
    """An agent with a belief and one without."""
    for agent, trace in traces.items():
        check_read_back(tmp_path / agent, trace, agent)


def check_read_back(folder: Path, trace, agent: str) -> None:  # noqa: ANN001
    write_trace(folder, trace, KEY)
    for run, seed in enumerate(trace.seeds):
        path = folder / f"seed={seed}.csv"
        assert path.read_bytes().startswith(HEADER)
        frame = pd.read_csv(path)
        assert tuple(frame.columns) == COLUMNS and len(frame) == H
        expected = seed_columns(trace, run)
        for column in ("t", "action", "state"):
            np.testing.assert_array_equal(frame[column], expected[column])
        # Floats are written in full (shortest round-trip form): equal up to the parser's ulp.
        for column in FLOATS:
            np.testing.assert_allclose(frame[column], expected[column], rtol=1e-15, atol=0)
        belief = expected["belief"]
        if agent == "random":
            assert (belief == NO_BELIEF).all()
            assert frame["belief"].isna().all() and frame["p_true_state"].isna().all()
        else:
            assert (belief != NO_BELIEF).all() and frame["belief"].notna().all()
            np.testing.assert_array_equal(frame["belief"], belief)
            np.testing.assert_allclose(
                frame["p_true_state"], expected["p_true_state"], rtol=1e-15, atol=0
            )


def test_floats_are_exact_and_missing_values_empty(traces) -> None:
    """Each float field parses (correctly rounded, Python's float) to the very double."""
    for agent, trace in traces.items():
        lines = seed_csv_bytes(trace, 1).decode().splitlines()
        fields = np.array([line.split(",") for line in lines[1:]])
        expected = seed_columns(trace, 1)
        for index, column in enumerate(COLUMNS):
            values = expected[column]
            if column == "belief" and agent == "random":
                assert set(fields[:, index]) == {""}, "no belief: empty, not -1"
            elif column == "p_true_state" and agent == "random":
                assert set(fields[:, index]) == {""}, "no belief: empty, not nan"
            else:
                assert [float(text) for text in fields[:, index]] == values.tolist(), column


LAYOUTS = [
    (0.1, "0.1"),
    (0.000001, "0.000001"),  # decimal exponent -6: still plain
    (1e-7, "1e-7"),  # -7: exponent form, without padding
    (123456789.5, "123456789.5"),
    (1e9, "1000000000"),  # exponent 9: plain, no trailing point
    (1e10, "1e+10"),  # 10: exponent form with its sign
    (12345678901.0, "1.2345678901e+10"),
    (-0.0, "-0"),
    (2.0**-1074, "5e-324"),
    (np.inf, "inf"),
    (np.nan, "nan"),
]


def test_the_layout_of_a_float() -> None:
    """The text nslb has always written for a float (a new pyarrow that lays it out
    otherwise would change every CSV's bytes)."""
    for value, field in LAYOUTS:
        columns = {c: np.array([1 if c in INTEGERS else value]) for c in COLUMNS}
        line = arrow_text(columns).decode().splitlines()[1].split(",")
        assert line[COLUMNS.index("reward")] == field, value


def test_seed_frame_is_the_csv_as_pandas(tmp_path: Path, traces) -> None:
    for trace in traces.values():
        write_trace(tmp_path, trace, KEY)
        frame = seed_frame(trace, 0)
        read = pd.read_csv(tmp_path / f"seed={trace.seeds[0]}.csv", dtype={"belief": "Int64"})
        pd.testing.assert_frame_equal(frame, read, check_dtype=False, rtol=1e-15)


def test_a_seed_writes_the_same_bytes_alone_or_in_a_batch(traces) -> None:
    alone = run_agent("mts", [4], SMALL)
    assert seed_csv_bytes(alone, 0) == seed_csv_bytes(traces["mts"], 1)


def test_write_trace_leaves_csv_and_json_and_no_temporary_files(tmp_path: Path, traces) -> None:
    write_trace(tmp_path / "new/folder", traces["mts"], KEY)
    names = sorted(p.name for p in (tmp_path / "new/folder").iterdir())
    assert names == ["seed=3.csv", "seed=3.json", "seed=4.csv", "seed=4.json"]
    assert json.loads((tmp_path / "new/folder/seed=4.json").read_text())["seed"] == 4


def _refuse(constant: str) -> None:
    raise ValueError(f"{constant} is not JSON")


def test_a_non_finite_statistic_is_null_with_what_it_was(tmp_path: Path, traces) -> None:
    delays = np.empty(2, dtype=object)  # a list per run, as detectors' delays are
    delays[:] = [[np.float32(np.inf)], (2.0,)]  # a plugin's numpy floats, a tuple
    summary = {"error": np.array([np.nan, 0.5]), "delays": delays}
    write_trace(tmp_path, dataclasses.replace(traces["mts"], summary=summary), KEY)
    first, second = (
        json.loads((tmp_path / f"seed={seed}.json").read_text(), parse_constant=_refuse)
        for seed in (3, 4)
    )
    assert (first["error"], first["delays"]) == (None, [None])
    assert first["not_finite"] == {"error": "NaN", "delays": "[Infinity]"}
    assert (second["error"], second["delays"], "not_finite" in second) == (0.5, [2.0], False)


def test_the_writer_threads_change_nothing_in_the_files(tmp_path: Path) -> None:
    trace = run_agent("mts", np.arange(7), SMALL)
    write_trace(tmp_path / "one", trace, KEY, threads=1)
    write_trace(tmp_path / "two", trace, KEY, threads=2)  # more seeds than 2 * threads in flight
    for seed in range(7):
        for name in (f"seed={seed}.csv", f"seed={seed}.json"):
            assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes()
        assert (tmp_path / "one" / f"seed={seed}.csv").read_bytes() == seed_csv_bytes(trace, seed)


def test_a_failed_write_raises_and_leaves_no_partial_file(tmp_path: Path, traces) -> None:
    (tmp_path / "seed=4.csv").mkdir()  # os.replace onto a folder fails
    with pytest.raises(OSError):
        write_trace(tmp_path, traces["mts"], KEY)
    assert (tmp_path / "seed=3.csv").is_file() and (tmp_path / "seed=4.csv").is_dir()
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_the_loader_reads_what_is_written(tmp_path: Path, traces) -> None:
    trace = traces["mts"]
    write_trace(tmp_path, trace, KEY)
    seeds = [(int(s), tmp_path / f"seed={s}.csv") for s in trace.seeds]
    found, skipped = read_run(seeds, ["cum_regret", "p_true_state"], horizon=H)
    assert skipped == [] and sorted(found) == [3, 4]
    np.testing.assert_allclose(found[4]["cum_regret"], np.cumsum(trace.regret[1]), rtol=1e-6)


COLUMN_KINDS = [
    np.arange(-3, 9, dtype=np.int64)[::2],  # a strided view
    np.arange(6, dtype=np.int32),
    np.arange(6, dtype=np.uint8),
    np.array([0.1, -0.0, np.inf, 5e-324, 1e300, 2.5]),
    np.linspace(0, 1, 6, dtype=np.float32),
    np.arange(6, dtype=">i8"),  # foreign byte order
    np.array([0.5, 1.5, 2.5, 3.5, 4.5, 5.5], dtype=">f8"),
    np.array([True, False, False, True, True, False]),
]


def test_columns_go_to_arrow_as_pyarrow_array_would_put_them() -> None:
    import pyarrow as pa

    from nslb_cli.store.results import _arrow

    for values in COLUMN_KINDS:
        for null in (None, np.arange(len(values)) % 3 == 1, np.ones(len(values), bool)):
            ours = _arrow(values, null)
            native = values.astype(values.dtype.newbyteorder("="))  # pyarrow refuses others
            assert ours.to_pylist() == pa.array(native, mask=null).to_pylist(), values.dtype
