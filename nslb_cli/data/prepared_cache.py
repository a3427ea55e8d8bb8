"""A folder of ``.npz`` files keyed by a hash of everything that determines their contents.

Writes are atomic (a temporary file in the same folder, then a rename), so a file under its
final name is always complete. A file that cannot be read back — truncated, corrupt, or
written by another version — counts as absent: the caller rebuilds and overwrites it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import zipfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger("nslb")

KEY_FIELD = "_cache_key"


def digest(settings: dict[str, Any]) -> str:
    """A short stable hash of a JSON-serialisable mapping."""
    text = json.dumps(settings, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def file_digest(path: Path, chunk: int = 1 << 22) -> str:
    """SHA-256 of the contents of ``path`` (as ``sha256sum`` prints it)."""
    hasher = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(chunk):
            hasher.update(block)
    return hasher.hexdigest()


def load(path: Path, key: str, fields: Iterable[str]) -> dict[str, np.ndarray] | None:
    """The arrays stored at ``path`` under ``key``, or ``None`` if absent or unusable."""
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as stored:
            if str(stored[KEY_FIELD]) != key:
                log.warning("%s: written for other settings; rebuilding it", path)
                return None
            return {name: stored[name] for name in fields}
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as err:
        log.warning("%s: unreadable (%s); rebuilding it", path, str(err).splitlines()[0])
        return None


def save(path: Path, key: str, arrays: dict[str, Any]) -> None:
    """Store ``arrays`` at ``path`` under ``key``, atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            np.savez_compressed(handle, **{**arrays, KEY_FIELD: np.array(key)})
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
