"""Folders: nslb's user cache, and whether an output folder can be written (checked before
any work is done)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import platformdirs

CACHE_ENV = "NSLB_CACHE"


def user_cache() -> Path:
    """nslb's cache folder: ``$NSLB_CACHE``, else the platform's user cache folder for
    ``nslb`` (e.g. ``~/.cache/nslb``)."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser().absolute()
    return Path(platformdirs.user_cache_dir("nslb"))


def unwritable(folder: Path) -> str | None:
    """``None`` if ``folder`` is or can be made a writable folder, else why not (tried, in its
    first existing ancestor: permission bits say little to root)."""
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
