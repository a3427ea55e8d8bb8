"""Per-seed results on disk (docs/design.md §6): ``seed=K.csv``, floats in their shortest
round-trip form by Arrow, and ``seed=K.json``, its statistics, result key and record."""

from __future__ import annotations

import json
import math
import re
import zlib
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.csv as pa_csv

from nslb_cli.bandit.trace import NO_BELIEF, BrokenContract, Trace, kept_rounds
from nslb_cli.store.atomic import atomic_write_bytes, fsync_folder

COLUMNS = (
    "t",
    "action",
    "reward",
    "expected_reward",
    "optimal_reward",
    "regret",
    "cum_regret",
    "cum_reward",
    "state",
    "belief",
    "p_true_state",
)
CONFIG_FILE = "config.yaml"
FORMATS = ("csv", "parquet")  # run.format
SEED_FILE = re.compile(r"^seed=(\d+)\.csv$")
SEED_STATS = re.compile(r"^seed=(\d+)\.json$")
HEADER = (",".join(COLUMNS) + "\n").encode()
INTEGERS = ("t", "action", "state", "belief")  # integers
FLOATS = tuple(name for name in COLUMNS if name not in INTEGERS)  # float64 here
NULLS = ("belief", "p_true_state")  # empty where NO_BELIEF, NaN: agents without a belief
# Arrow would quote the header's names (ours is written by hand); one batch is faster than 1,024
_CSV_OPTIONS = pa_csv.WriteOptions(include_header=False, batch_size=1 << 16)
EVERY = "every"  # the key of run.every in a seed's record (absent: 1, every round)
NOT_FINITE = "not_finite"  # the statistics written as null, and what they were (NaN, ±inf)
RECORD_KEYS = frozenset({"seed", "config", "csv", EVERY, NOT_FINITE})
STATS_KEYS = frozenset({*RECORD_KEYS, "run"})  # names no statistic may take
WRITE_THREADS = 4  # threads that write and fsync the files of write_trace
TAIL_BYTES = 4096  # far more than one row (11 numbers in their shortest form)


@dataclass(frozen=True)
class Layout:
    """How a job stores its rounds: ``run.format`` (``csv`` or ``parquet``) and ``run.every``
    (the rounds kept: ``kept_rounds``)."""

    format: str = "csv"
    every: int = 1

    def __str__(self) -> str:
        return f"run.format={self.format} run.every={self.every}"


def seed_csv(folder: Path, seed: int) -> Path:
    return folder / f"seed={seed}.csv"


def final_value(folder: Path, seed: int, column: str) -> float:
    """``column``'s value in the last round of ``seed=K.csv``, read from the file's last
    line (a run's final ``cum_regret``, say) without parsing the rest."""
    with seed_csv(folder, seed).open("rb") as file:
        size = file.seek(0, 2)
        file.seek(max(0, size - TAIL_BYTES))
        last = file.read().rstrip(b"\n").rsplit(b"\n", 1)[-1]
    return float(last.split(b",")[COLUMNS.index(column)])


def trace_columns(trace: Trace, runs: slice = slice(None), every: int = 1) -> dict[str, np.ndarray]:
    """The columns of ``runs`` of a trace, each ``(runs, rounds kept)``, ``t`` ``(rounds kept,)``:
    summed over every round, then thinned to the rounds ``every`` keeps."""
    regret = trace.optimal_reward[runs] - trace.expected_reward[runs]  # trace.regret's rows
    if trace.rounds is not None:
        assert np.array_equal(trace.rounds, kept_rounds(int(trace.rounds[-1]), every))
        sums = {name: values[runs] for name, values in trace.cumulative.items()}
        return _columns(trace, runs, trace.rounds, regret, sums)
    sums = {
        "cum_regret": np.cumsum(regret, axis=1),
        "cum_reward": np.cumsum(trace.reward[runs], axis=1),
    }
    columns = _columns(trace, runs, np.arange(1, regret.shape[1] + 1), regret, sums)
    if every == 1:
        return columns
    kept = kept_rounds(regret.shape[1], every)
    return {name: values[..., kept - 1] for name, values in columns.items()}


def _columns(
    trace: Trace, runs: slice, rounds: np.ndarray, regret: np.ndarray, sums: dict[str, np.ndarray]
) -> dict[str, np.ndarray]:
    """``COLUMNS``, in order: the trace's arrays of the same names but those made here."""
    made = {"t": rounds, "regret": regret, **sums}
    return {name: made[name] if name in made else getattr(trace, name)[runs] for name in COLUMNS}


def seed_columns(trace: Trace, run: int, every: int = 1) -> dict[str, np.ndarray]:
    """The columns of one run of a trace (``trace_columns``), each one-dimensional."""
    columns = trace_columns(trace, slice(run, run + 1), every)
    return {name: values if name == "t" else values[0] for name, values in columns.items()}


def seed_csv_bytes(trace: Trace, run: int, every: int = 1) -> bytes:
    """The ``seed=K.csv`` text of one run."""
    return arrow_text(seed_columns(trace, run, every))


def arrow_text(columns: dict[str, np.ndarray]) -> bytes:
    """The CSV text of ``seed_columns`` ``columns``, by Arrow's CSV writer."""
    table = arrow_table(columns)
    stream = pa.BufferOutputStream()
    stream.write(HEADER)
    pa_csv.write_csv(table, stream, _CSV_OPTIONS)
    return stream.getvalue().to_pybytes()


def arrow_table(columns: dict[str, np.ndarray]) -> pa.Table:
    """One-dimensional ``columns`` as an Arrow table, null where ``NULLS`` are unknown."""
    nulls = {
        name: columns[name] == NO_BELIEF if name in INTEGERS else np.isnan(columns[name])
        for name in NULLS
    }
    return pa.table({name: _arrow(values, nulls.get(name)) for name, values in columns.items()})


def _arrow(values: np.ndarray, null: np.ndarray | None = None) -> pa.Array:
    """A numeric numpy column as an Arrow array over the same memory, null where ``null``:
    from buffers, as ``pyarrow.array`` imports pandas on its first call (0.3 s a process)."""
    values = np.ascontiguousarray(values, dtype=values.dtype.newbyteorder("="))
    if values.dtype.kind not in "iuf":
        return pa.array(values, mask=null)
    validity = None
    if null is not None and null.any():
        validity = pa.py_buffer(np.packbits(~null, bitorder="little"))
    data = pa.py_buffer(values)
    return pa.Array.from_buffers(pa.from_numpy_dtype(values.dtype), len(values), [validity, data])


def write_trace(
    folder: Path, trace: Trace, key: str, threads: int = WRITE_THREADS, every: int = 1
) -> None:
    """Write every run of ``trace`` for result key ``key``, its JSON then its CSV, each atomically,
    then fsync the folder once; ``threads`` threads overlap the runs' fsyncs."""
    folder.mkdir(parents=True, exist_ok=True)
    with ThreadPoolExecutor(threads, thread_name_prefix="nslb-write") as pool:
        runs = range(len(trace.seeds))  # each run's error, if any, raised here in order
        list(pool.map(lambda run: _write_run(folder, trace, key, run, every), runs))
    fsync_folder(folder)


def _write_run(folder: Path, trace: Trace, key: str, run: int, every: int) -> None:
    """``seed=K.json``, then ``seed=K.csv``, of one run."""
    seed = int(trace.seeds[run])
    summary = {k: _plain(v[run]) for k, v in trace.summary.items()}
    stats = {"seed": seed, **{k: strict(v) for k, v in summary.items()}}
    csv = seed_csv_bytes(trace, run, every)
    stats |= {"config": key, **({EVERY: every} if every != 1 else {}), "csv": csv_integrity(csv)}
    if odd := {k: json.dumps(v, default=float) for k, v in summary.items() if strict(v) != v}:
        stats[NOT_FINITE] = odd  # NaN != NaN: only a non-finite float makes strict(v) differ
    text = json.dumps(stats, indent=1, allow_nan=False) + "\n"
    atomic_write_bytes(folder / f"seed={seed}.json", text.encode())
    atomic_write_bytes(seed_csv(folder, seed), csv)


def strict(value: Any) -> Any:
    """``value`` as strict JSON holds it: numpy floats as Python's, each non-finite one (NaN,
    ±inf) as ``None``."""
    if isinstance(value, list | tuple):
        return type(value)(strict(v) for v in value)
    if isinstance(value, float | np.floating):
        return float(value) if math.isfinite(value) else None
    return value


def check_summary(trace: Trace) -> None:
    """Refuse (``BrokenContract``) a statistic named as a field of the seed's record."""
    taken = sorted(set(trace.summary) & STATS_KEYS)
    if taken:
        raise BrokenContract(
            f"its summary names a statistic {taken[0]!r}, which the seed's record holds: "
            "it must be called otherwise"
        )


def _plain(value: Any) -> Any:
    """A statistic as JSON takes it (a numpy scalar as its Python number)."""
    return value.item() if isinstance(value, np.generic) else value


def csv_integrity(data: bytes) -> dict[str, Any]:
    """What ``seed=K.json`` records of its CSV: size and CRC-32."""
    return {"bytes": len(data), "crc32": f"{zlib.crc32(data):08x}"}


def integrity_problem(record: Any, data: bytes) -> str | None:
    """Why ``data`` is not the CSV that integrity record ``record`` describes, or ``None``."""
    if record == csv_integrity(data):
        return None
    wrote = record if isinstance(record, dict) else {}
    return (
        f"damaged: {len(data)} bytes with CRC-32 {csv_integrity(data)['crc32']}, but "
        f"nslb wrote {wrote.get('bytes')} bytes with CRC-32 {wrote.get('crc32')}"
    )


def read_json(path: Path) -> Any:
    """The JSON value of the file ``path``; ``None`` when it cannot be read or parsed."""
    try:
        return json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None


def seed_record(csv_path: Path) -> dict[str, Any]:
    """The ``seed=K.json`` beside ``csv_path`` (empty when absent or unreadable)."""
    record = read_json(csv_path.with_suffix(".json"))
    return record if isinstance(record, dict) else {}


def recorded_every(csv_path: Path) -> int:
    """The ``run.every`` that ``seed=K.json`` records for ``csv_path`` (1: none recorded)."""
    try:
        return int(seed_record(csv_path).get(EVERY, 1))
    except (ValueError, TypeError):
        return 1


OTHER_KEY = "written for another config or data"
"""How ``damaged`` begins its reason for a seed recording another result key."""


def damaged(csv_path: Path, data: bytes, key: str | None = None) -> str | None:
    """Why ``data`` (the bytes of ``csv_path``) is not what ``seed=K.json`` says nslb wrote
    (for result key ``key``, when given), or ``None``; a CSV without a record is taken as it is."""
    record = seed_record(csv_path)
    if key is not None and record.get("config", key) != key:
        return f"{OTHER_KEY} (result key {record.get('config')}, the folder's config.yaml is {key})"
    return integrity_problem(record["csv"], data) if "csv" in record else None


def flatten(tree: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"env": {"horizon": 5}}`` -> ``{"env.horizon": 5}``."""
    flat: dict[str, Any] = {}
    for key, value in tree.items():
        if isinstance(value, dict):
            flat.update(flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def counted(n: int, noun: str) -> str:
    """``1 seed``, ``2 seeds``: ``n`` and ``noun`` (plural with an ``s``)."""
    return f"{n} {noun}{'s' if n != 1 else ''}"


def seed_ranges(seeds: Iterable[int]) -> str:
    """``[0, 1, 2, 5, 7, 8]`` -> ``0–2, 5, 7–8``."""
    ordered = sorted(seeds)
    parts, start = [], None
    for i, seed in enumerate(ordered):
        start = seed if start is None else start
        if i + 1 == len(ordered) or ordered[i + 1] != seed + 1:
            parts.append(str(seed) if seed == start else f"{start}–{seed}")
            start = None
    return ", ".join(parts)
