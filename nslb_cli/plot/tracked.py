"""``nslb plot --track``: a group's figures and tables as artifacts of the MLflow runs its run
folders' jobs logged (``tracking=mlflow``; each folder keeps its run in ``.nslb-tracking.json``).

A tracker that fails is one warning line and never fails the plot: the files are on disk.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from nslb_cli.store import tracking

ARTIFACT_PATH = "figures"  # where in a run's artifacts the plot's files go


def log_group_files(
    folders: Mapping[Path, Sequence[Path]], written: Sequence[Path], warn: Callable[[str], None]
) -> int:
    """Log the files of ``written`` whose names begin with a group's stem (``folders``: each
    group stem and its run folders) to every MLflow run those folders recorded; the number of
    runs that took them. Folders without a recorded run are counted in one line."""
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


def _group_of(path: Path, folders: Mapping[Path, Sequence[Path]]) -> Path | None:
    """The group stem ``path`` was written under: the longest that names it (``e-2-…`` is
    group ``e-2``'s, not ``e``'s)."""
    named = [stem for stem in folders if path.name.startswith(f"{stem.name}-")]
    return max(named, key=lambda stem: len(stem.name), default=None)
