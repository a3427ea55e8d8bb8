"""Read a run folder's Parquet results (``run.format=parquet``) into checked columns per
seed, as ``csvread`` reads seed CSVs; a file whose bytes do not match its
footer's record (``nslb_cli.store.parquet``) is skipped with its reason.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa

from nslb_cli.bandit.trace import kept_rounds
from nslb_cli.plot.csvread import DTYPES, NULLABLE, Columns, MalformedResult, Skipped
from nslb_cli.store import parquet
from nslb_cli.store.results import OTHER_KEY

TRIES = 5  # reads of a folder whose files a job keeps sealing meanwhile


CHANGING = "changed while it was read, again and again (a job is writing the folder): skipped"


def stored_now(folder: Path) -> tuple[list[parquet.Record], dict[Path, str]]:
    """``nslb_cli.store.parquet.stored``, listed again while a job seals the folder's
    parts; after ``TRIES`` lists, skipped in one line."""
    for _ in range(TRIES):
        with contextlib.suppress(FileNotFoundError):
            return parquet.stored(folder)
    return [], {folder / parquet.FILE: CHANGING}


def read_run(
    folder: Path, columns: Sequence[str], horizon: int | None, key: str | None = None
) -> tuple[dict[int, Columns], list[Skipped]]:
    """The Parquet results of one run folder: ``{seed: columns}`` and the files or seeds
    skipped; read again while a job seals its parts, ``TRIES`` times."""
    for _ in range(TRIES):
        with contextlib.suppress(FileNotFoundError, parquet.Changed):
            return _read_run(folder, columns, horizon, key)
    return {}, [Skipped(folder / parquet.FILE, CHANGING)]


def _read_run(
    folder: Path, columns: Sequence[str], horizon: int | None, key: str | None
) -> tuple[dict[int, Columns], list[Skipped]]:
    """``read_run``, once."""
    records = parquet.stored(folder)[0]
    skipped: list[Skipped] = []
    found: dict[int, Columns] = {}
    for record in records:
        if key is not None and record.key != key:
            reason = f"{OTHER_KEY} (result key {record.key}, the folder's config.yaml is {key})"
            skipped.append(Skipped(record.path, reason))
            continue
        try:
            try:
                read = parquet.read_columns(record, ["seed", "t", *columns])
            except KeyError as err:  # pyarrow: a column the file lacks
                raise MalformedResult(f"not nslb's columns: {err.args[0]}") from None
            arrays = _checked(record, read, horizon)
        except parquet.Changed:
            raise  # read the folder again
        except (parquet.Damaged, MalformedResult, pa.ArrowException) as err:
            skipped.append(Skipped(record.path, str(err).strip().splitlines()[0]))
            continue
        rows = record.rows
        for index, seed in enumerate(record.seeds):
            values = {
                name: array[index * rows : (index + 1) * rows] for name, array in arrays.items()
            }
            missing = [c for c in columns if c not in NULLABLE and np.isnan(values[c]).any()]
            if missing:
                skipped.append(Skipped(record.path, f"seed {seed}: missing values in {missing[0]}"))
            elif seed not in found:
                found[seed] = values
    return dict(sorted(found.items())), skipped


def _checked(record: parquet.Record, arrays: dict[str, np.ndarray], horizon: int | None) -> Columns:
    """The columns ``t`` and values of ``record``'s file in ``DTYPES``, once its rows are
    its seeds' rows, each seed's exactly the rounds kept; else MalformedResult."""
    seeds, t = arrays.pop("seed"), arrays["t"]
    last = horizon if horizon is not None else int(t[record.rows - 1])
    rounds = kept_rounds(last, record.every)
    if len(rounds) != record.rows:
        kept = f" with run.every={record.every} ({len(rounds)} rounds kept)" * (record.every > 1)
        raise MalformedResult(
            f"truncated: {record.rows} rounds a seed, its config says env.horizon={horizon}{kept}"
        )
    if not np.array_equal(seeds, np.repeat(record.seeds, record.rows)):
        raise MalformedResult("column seed does not hold the seeds its record names")
    if not np.array_equal(t, np.tile(rounds, len(record.seeds))):
        raise MalformedResult(f"column t is not the rounds kept of 1 … {last} in each seed")
    return {name: values.astype(DTYPES[name], copy=False) for name, values in arrays.items()}
