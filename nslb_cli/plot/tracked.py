"""``nslb plot --track``: a group's figures and tables as artifacts of the MLflow runs its run
folders' jobs logged (``tracking=mlflow``; each folder keeps its run in ``.nslb-tracking.json``).

Run folders whose jobs still wait to be logged (a command that did not wait for its logging
process) are waited for, at most ``PATIENCE`` seconds. A tracker that fails is one warning
line and never fails the plot: the files are on disk.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from nslb_cli.store import tracking

ARTIFACT_PATH = "figures"  # where in a run's artifacts the plot's files go
PATIENCE = 60.0  # seconds to wait for run folders still being logged
STALE = 600.0  # seconds after which a folder's mark no longer means that it is being logged


def log_group_files(
    folders: Mapping[Path, Sequence[Path]], written: Sequence[Path], warn: Callable[[str], None]
) -> int:
    """Log the files of ``written`` whose names begin with a group's stem (``folders``: each
    group stem and its run folders) to every MLflow run those folders recorded; the number of
    runs that took them. Folders without a recorded run are counted in one line."""
    _wait_for_logging([folder for of_group in folders.values() for folder in of_group])
    clients: dict[str, Any] = {}
    logged, untracked = 0, 0
    for stem, of_group in folders.items():
        files = [path for path in written if _group_of(path, folders) == stem]
        for folder in of_group:
            kept = tracking.recorded(folder)
            if kept is None:
                untracked += 1
                continue
            try:
                if kept.uri not in clients:
                    clients[kept.uri] = tracking.client(kept.uri)
                for path in files:
                    clients[kept.uri].log_artifact(kept.run_id, str(path), ARTIFACT_PATH)
            except Exception as err:  # unreachable, locked, a run deleted: the plot stands
                tracking.warn(err)
                return logged
            logged += 1
    if untracked:
        warn(f"--track: {untracked} run folders have no MLflow run (run them with tracking=mlflow)")
    return logged


def _wait_for_logging(folders: Sequence[Path]) -> None:
    """Return once no folder of ``folders`` waits to be logged, or after ``PATIENCE``."""
    deadline = time.monotonic() + PATIENCE
    while time.monotonic() < deadline:
        if not any(_pending(folder) for folder in folders):
            return
        time.sleep(0.1)


def _pending(folder: Path) -> bool:
    """Whether ``folder``'s latest job waits to be logged: its mark is younger than ``STALE``
    (an older one outlived a logging process that was killed)."""
    try:
        return time.time() - (folder / tracking.PENDING_FILE).stat().st_mtime < STALE
    except OSError:
        return False


def _group_of(path: Path, folders: Mapping[Path, Sequence[Path]]) -> Path | None:
    """The group stem ``path`` was written under: the longest that names it (``e-2-…`` is
    group ``e-2``'s, not ``e``'s)."""
    named = [stem for stem in folders if path.name.startswith(f"{stem.name}-")]
    return max(named, key=lambda stem: len(stem.name), default=None)
