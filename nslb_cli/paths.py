"""Output folders: whether one can be written, checked before any work is done."""

from __future__ import annotations

import tempfile
from pathlib import Path


def unwritable(folder: Path) -> str | None:
    """``None`` if ``folder`` exists as a folder or can be created and written, else why not.

    Tried in the folder's first existing ancestor with a temporary folder, removed at once
    (as root, permission bits say little: only trying tells, e.g. under ``/proc``).
    """
    existing = folder.expanduser().absolute()
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        return f"cannot write {folder}: {existing} is a file, not a folder"
    try:
        tempfile.TemporaryDirectory(dir=existing, prefix=".nslb-check-").cleanup()
    except OSError as err:
        return f"cannot write {folder}: {err.strerror} in {existing}"
    return None
