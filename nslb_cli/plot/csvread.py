"""Parse seed CSVs into checked columns (pyarrow's multithreaded CSV reader): one row per
round ``1 … env.horizon``, no missing value outside ``NULLABLE``, else a
``MalformedResult`` says what is wrong. Files of a run folder that share their header are
parsed in one call; those that fail are parsed one by one, which says why.
"""

from __future__ import annotations

import contextlib
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pa_csv

from nslb_cli.bandit.trace import kept_rounds
from nslb_cli.store.results import damaged, recorded_every

NULLABLE = frozenset({"belief", "p_true_state"})  # empty for agents without a belief
Columns = dict[str, np.ndarray]  # "t" (int32) and value columns (float64) of one seed
DTYPES: defaultdict[str, type[np.number]] = defaultdict(lambda: np.float64, t=np.int32)
"""The dtype of each column read: the rounds as int32, the values as the doubles written."""


class MalformedResult(ValueError):
    """A seed CSV or config file that cannot be used; the message is one line."""


@dataclass(frozen=True)
class Skipped:
    """A file or folder left out of the table, and why."""

    path: Path
    reason: str

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"


def read_seed(path: Path, columns: Sequence[str], horizon: int | None, every: int = 1) -> Columns:
    """Columns ``t`` and ``columns`` of one seed CSV, checked complete (the rounds ``every``
    keeps); else MalformedResult."""
    try:
        table = pa_csv.read_csv(path, convert_options=_convert(columns))
    except (pa.ArrowException, OSError) as err:
        why = "truncated: its last line is cut off ({})" if _cut_off(path) else "unreadable CSV: {}"
        raise MalformedResult(why.format(message_line(err))) from None
    return _checked(_arrays(table), horizon, every)


def read_run(
    seeds: Sequence[tuple[int, Path]],
    columns: Sequence[str],
    horizon: int | None,
    key: str | None = None,
) -> tuple[dict[int, Columns], list[Skipped]]:
    """The seed CSVs of one run folder: ``{seed: columns}`` (sorted) and the files skipped
    (unreadable, damaged, or written for another config than the folder's, result ``key``)."""
    batches: dict[tuple[bytes, int], dict[int, tuple[bytes, int]]] = {}  # (header, every) ->
    alone: list[int] = []
    skipped: list[Skipped] = []
    changed: dict[int, str] = {}  # seeds whose bytes differ from what nslb wrote
    every: dict[int, int] = {}  # the run.every of each seed's record
    paths = dict(seeds)
    for seed, path in seeds:
        try:
            text = path.read_bytes()
        except OSError:
            alone.append(seed)
            continue
        reason = damaged(path, text, key)
        if reason:
            changed[seed] = reason
        rows, every[seed] = _rows(text, horizon), recorded_every(path)
        if rows:  # seed -> (text, rows)
            batches.setdefault((text[: text.find(b"\n") + 1], every[seed]), {})[seed] = (text, rows)
        else:
            alone.append(seed)
    found: dict[int, Columns] = {}
    for (header, kept), texts in batches.items():
        found.update(_read_joined(header, texts, columns, horizon, kept))
        alone += [seed for seed in texts if seed not in found]
    for seed in alone:
        try:
            found[seed] = read_seed(paths[seed], columns, horizon, every.get(seed, 1))
        except MalformedResult as err:
            skipped.append(Skipped(paths[seed], str(err)))
    for seed in changed.keys() & found.keys():  # well-formed, but not what was written
        del found[seed]
        skipped.append(Skipped(paths[seed], changed[seed]))
    return dict(sorted(found.items())), sorted(skipped, key=lambda s: str(s.path))


def message_line(err: BaseException) -> str:
    """The first line of an exception's message (its type when it has none)."""
    text = str(err).strip().strip("'\"")
    return text.splitlines()[0] if text else type(err).__name__


def _read_joined(
    header: bytes,
    texts: dict[int, tuple[bytes, int]],
    columns: Sequence[str],
    horizon: int | None,
    every: int,
) -> dict[int, Columns]:
    """Parse files sharing ``header`` and ``every`` in one call; return the seeds whose rows
    pass ``_checked`` (the others are read alone, which says why)."""
    size = len(header)
    body = b"".join([header, *(memoryview(text)[size:] for text, _ in texts.values())])
    try:
        table = pa_csv.read_csv(pa.py_buffer(body), convert_options=_convert(columns))
    except pa.ArrowException:
        return {}
    if table.num_rows != sum(rows for _, rows in texts.values()):  # blank or multi-line rows
        return {}
    arrays, start, found = _arrays(table), 0, {}
    for seed, (_, rows) in texts.items():
        part = {key: values[start : start + rows] for key, values in arrays.items()}
        start += rows
        with contextlib.suppress(MalformedResult):
            found[seed] = _checked(part, horizon, every)
    return found


def _rows(text: bytes, horizon: int | None) -> int:
    """The rows of a file that looks complete (0 if it does not): it ends with a newline and,
    when the horizon is known, its last line is round ``horizon``."""
    header_end = text.find(b"\n") + 1
    last_line = text.rfind(b"\n", 0, len(text) - 1) + 1
    if header_end <= 1 or not text.endswith(b"\n") or last_line < header_end:
        return 0
    if horizon is not None and not text.startswith(b"%d," % horizon, last_line):
        return 0
    return text.count(b"\n") - 1


def _cut_off(path: Path) -> bool:
    """Whether a non-empty file ends without a newline."""
    try:
        with path.open("rb") as handle:
            size = handle.seek(0, 2)
            handle.seek(max(size - 1, 0))
            return size > 0 and handle.read(1) != b"\n"
    except OSError:
        return False


def _convert(columns: Sequence[str]) -> pa_csv.ConvertOptions:
    """Read ``t`` as integers and ``columns`` as doubles (empty fields and ``nan`` as NaN)."""
    types = {"t": pa.int64(), **dict.fromkeys(columns, pa.float64())}
    return pa_csv.ConvertOptions(include_columns=list(types), column_types=types)


def _arrays(table: pa.Table) -> Columns:
    """The table's columns as numpy arrays (nulls as NaN)."""
    return {name: table.column(name).to_numpy() for name in table.column_names}


def _checked(arrays: Columns, horizon: int | None, every: int) -> Columns:
    """One seed's columns in ``DTYPES`` (the rounds ``every`` keeps), or
    MalformedResult saying what is wrong."""
    t = arrays["t"]
    n = len(t)
    kept = kept_rounds(horizon, every) if horizon is not None else None
    if kept is not None and n != len(kept):
        thinned = f" with run.every={every} ({len(kept)} rounds kept)" * (every > 1)
        raise MalformedResult(
            f"truncated: {n} rounds, its config says env.horizon={horizon}{thinned}"
        )
    if n == 0 or not np.array_equal(t, kept_rounds(int(t[-1]), every) if kept is None else kept):
        shown = f"1 … {n}" if every == 1 else f"kept of 1 … {t[-1] if n else 0}"
        raise MalformedResult(f"column t is not the rounds {shown} (truncated line?)")
    for column, values in arrays.items():
        if column != "t" and column not in NULLABLE and np.isnan(values).any():
            raise MalformedResult(f"missing values in column {column} (truncated line?)")
    return {key: values.astype(DTYPES[key], copy=False) for key, values in arrays.items()}
