"""Draw and save a report's figures, in parallel worker processes when that pays.

Each figure is a :class:`Job`: a drawing function, its arguments (small tables of
statistics) and the file stem to save it under, every job drawn with the same theme.
Drawing is CPU-bound Python, so on Linux the jobs are spread over forked processes (which
inherit the imported libraries); elsewhere, or with one worker, they run one after the
other. Either way the files written are the same.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from nslb_cli.common.apart import end_when
from nslb_cli.plot.figures import Theme, drawing_with, save, theme

PARALLEL_ROWS = 200_000  # below this many result rows a report draws faster than pools start


@dataclass(frozen=True)
class Job:
    """One figure to draw (``draw(**arguments)``) and save as ``stem.<format>``."""

    draw: Callable[..., Figure]
    stem: Path
    arguments: dict[str, Any] = field(default_factory=dict)


def workers(rows: int) -> int:
    """How many processes to draw with: the CPUs this process may use, for large results."""
    if rows < PARALLEL_ROWS or not sys.platform.startswith("linux"):
        return 1
    return len(os.sched_getaffinity(0))


def run(
    jobs: Sequence[Job],
    formats: Iterable[str],
    dpi: int,
    processes: int,
    rc: Theme | None = None,
) -> list[Path]:
    """Draw and save every job (in ``processes`` processes) with the matplotlib settings
    ``rc`` (default: :func:`~nslb_cli.plot.figures.theme`); the paths, in job order."""
    rc = theme() if rc is None else rc
    tasks = [(job, tuple(formats), dpi, rc) for job in jobs]
    processes = min(processes, len(tasks))
    if processes <= 1:
        return [path for task in tasks for path in _render(task)]
    context = multiprocessing.get_context("fork")
    gc.freeze()  # the workers' collections then skip the inherited objects: fewer pages copied
    try:
        with ProcessPoolExecutor(
            max_workers=processes,
            mp_context=context,
            initializer=_end_with_parent,
            initargs=(os.getpid(),),
        ) as pool:
            return [path for paths in pool.map(_render, tasks) for path in paths]
    finally:
        gc.unfreeze()


def _end_with_parent(parent: int) -> None:
    """In a drawing worker: end it with the plot command that forked it, which cannot stop
    its workers when it is killed with SIGKILL (they would wait for work forever)."""
    end_when(lambda: os.getppid() != parent, "nslb-plot-parent")


def _render(task: tuple[Job, tuple[str, ...], int, Theme]) -> list[Path]:
    job, formats, dpi, rc = task
    with drawing_with(rc):
        return save(job.draw(**job.arguments), job.stem, formats, dpi)
