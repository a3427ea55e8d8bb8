"""Overwriting a run folder's results atomically (``run.overwrite=true``; docs/design.md §6),
through a journal (``COMPLETE``) that a later run replays if a kill stopped it."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from nslb_cli.common.stopping import held
from nslb_cli.store import parquet
from nslb_cli.store.atomic import atomic_write_text, fsync_folder
from nslb_cli.store.folder import written_under_lock
from nslb_cli.store.results import SEED_FILE

STAGING = ".nslb-overwrite"
COMPLETE = "COMPLETE"


def begin(folder: Path) -> Path:
    """A new, empty staging folder in ``folder`` for the results that will replace its own."""
    abandon(folder)
    staging = folder / STAGING
    staging.mkdir(parents=True)
    return staging


def commit(folder: Path) -> list[int]:
    """Swap the staged results in, Ctrl-C and SIGTERM held till it is done; return the seeds
    of the old results that the new ones do not have, now removed."""
    staging = folder / STAGING
    names = sorted(p.name for p in staging.iterdir() if not p.name.startswith("."))
    before = _stored_seeds(folder)
    with held():
        atomic_write_text(staging / COMPLETE, json.dumps(names) + "\n")
        _replay(folder)
    return sorted(before - _stored_seeds(folder))


def abandon(folder: Path) -> None:
    """Remove a staging folder that will never be swapped in."""
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
        if path.name not in names and written_under_lock(path.name):
            path.unlink()
    shutil.rmtree(folder / parquet.PARTS, ignore_errors=True)  # the old results' last batches
    fsync_folder(folder)
    shutil.rmtree(staging)


def _stored_seeds(folder: Path) -> set[int]:
    """The seeds of ``folder``'s results that can be read, in either format."""
    found = {int(m.group(1)) for p in folder.iterdir() if (m := SEED_FILE.match(p.name))}
    return found | set(parquet.owners(parquet.stored(folder)[0]))
