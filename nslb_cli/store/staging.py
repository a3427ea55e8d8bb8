"""Overwriting a run folder's results atomically (``run.overwrite=true``).

The new results are written beside the old ones, in ``<folder>/.nslb-overwrite/``, and swap
in only when the job has finished: a crash, Ctrl-C or kill before leaves the old results
whole (the next run of the folder removes the unfinished staging). The swap is a journal
replayed until it is done: the staging folder first gets ``COMPLETE``, the list of its
files; then each is renamed over its old namesake, the old results it does not list are
removed, and the staging folder goes. A process killed during the swap leaves ``COMPLETE``
behind, and the next run of the folder finishes the swap before anything else. All of it
happens under the folder's lock (:mod:`nslb_cli.store.lock`).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from nslb_cli.common.stopping import held
from nslb_cli.store import parquet, provenance
from nslb_cli.store.atomic import atomic_write_text, fsync_folder
from nslb_cli.store.folder import CONFIG_FILE, DATA_FILE
from nslb_cli.store.results import SEED_FILE, SEED_STATS

STAGING = ".nslb-overwrite"
COMPLETE = "COMPLETE"
RESULT_FILES = frozenset({CONFIG_FILE, DATA_FILE, provenance.FILE, parquet.FILE})


def begin(folder: Path) -> Path:
    """A new, empty staging folder in ``folder`` for the results that will replace its own."""
    abandon(folder)
    staging = folder / STAGING
    staging.mkdir(parents=True)
    return staging


def commit(folder: Path) -> list[int]:
    """Swap the staged results in (the module docstring's journal); return the seeds of the
    old results that the new ones do not have, now removed. Ctrl-C and SIGTERM wait until
    the swap is done (:func:`~nslb_cli.common.stopping.held`): only a kill can stop it
    half-way, and the next run of the folder then finishes it."""
    staging = folder / STAGING
    names = sorted(p.name for p in staging.iterdir() if not p.name.startswith("."))
    before = _stored_seeds(folder)
    with held():
        atomic_write_text(staging / COMPLETE, json.dumps(names) + "\n")
        _replay(folder)
    return sorted(before - _stored_seeds(folder))


def abandon(folder: Path) -> None:
    """Remove a staging folder that will never be swapped in (its job failed: on a full
    disk, its space is given back at once); the old results were never touched."""
    shutil.rmtree(folder / STAGING, ignore_errors=True)


def recover(folder: Path) -> None:
    """Finish a swap a killed process left behind, or drop a staging it never finished."""
    staging = folder / STAGING
    if (staging / COMPLETE).is_file():
        _replay(folder)
    else:
        abandon(folder)


def _replay(folder: Path) -> None:
    staging = folder / STAGING
    names = set(json.loads((staging / COMPLETE).read_text(encoding="utf-8")))
    for name in sorted(names):
        if (staging / name).exists():
            os.replace(staging / name, folder / name)
    for path in folder.iterdir():
        if path.name not in names and _is_result(path.name):
            path.unlink()
    shutil.rmtree(folder / parquet.PARTS, ignore_errors=True)  # the old results' last batches
    fsync_folder(folder)
    shutil.rmtree(staging)


def _is_result(name: str) -> bool:
    return bool(SEED_FILE.match(name) or SEED_STATS.match(name) or name in RESULT_FILES)


def _stored_seeds(folder: Path) -> set[int]:
    """The seeds of ``folder``'s results that can be read, in either format."""
    found = {int(m.group(1)) for p in folder.iterdir() if (m := SEED_FILE.match(p.name))}
    return found | set(parquet.owners(parquet.stored(folder)[0]))
