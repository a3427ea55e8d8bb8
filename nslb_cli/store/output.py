"""A job's results in the layout it asks for (``run.format``, ``run.every``): what the round
loop's batches are written with, how a job ends, and its final values read back.

A simulator hands each batch's :class:`~nslb_cli.bandit.trace.Trace` (every round of every
run) to :func:`write_batch`, under the folder's lock, and calls :func:`finish` once its
batches are written; the layout decides the files (docs/design.md §6).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np

from nslb_cli.bandit.trace import BrokenContract, Trace
from nslb_cli.store import parquet
from nslb_cli.store.results import SEED_FILE, STATS_KEYS, Layout, final_value, write_trace


def write_batch(folder: Path, trace: Trace, key: str, layout: Layout) -> None:
    """Write the runs of ``trace`` (result key ``key``) into ``folder``, whole: a CSV and
    its record per seed, or a part of the job's Parquet file; the rounds ``layout.every``
    keeps (the cumulative columns summed over every round)."""
    if layout.format == "parquet":
        parquet.write_part(folder, trace, key, layout.every)
    else:
        write_trace(folder, trace, key, every=layout.every)


def check_summary(trace: Trace) -> None:
    """Refuse (:class:`BrokenContract`) a statistic of the agent's summary named as a field
    of the seed's record, which it would overwrite or lose."""
    taken = sorted(set(trace.summary) & STATS_KEYS)
    if taken:
        raise BrokenContract(
            f"its summary names a statistic {taken[0]!r}, which the seed's record holds: "
            "it must be called otherwise"
        )


def finish(folder: Path, layout: Layout, batch_size: int) -> None:
    """End a job whose batches are written: seal the Parquet parts into one file (row groups
    of ``batch_size`` seeds); nothing for CSVs."""
    if layout.format == "parquet":
        parquet.seal(folder, batch_size)


def final_values(folder: Path, seeds: Iterable[int], column: str, layout: Layout) -> np.ndarray:
    """The final value of ``column`` for each of ``seeds`` in ``folder``."""
    if layout.format == "parquet":
        return parquet.final_values(folder, seeds, column)
    return np.array([final_value(folder, seed, column) for seed in seeds])


def stored_seeds(folder: Path) -> set[int]:
    """The seeds of ``folder``'s results that can be read, in either format."""
    found = {int(m.group(1)) for p in folder.iterdir() if (m := SEED_FILE.match(p.name))}
    return found | set(parquet.owners(parquet.stored(folder)[0]))
