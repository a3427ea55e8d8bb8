"""What a run *is*: its resolved configuration without the ``run`` section and the local
paths (``LOCAL_PATHS``), with the data it simulated named by content under ``DATA``
(docs/guide/plotting.md, *Runs and groups*).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from nslb_cli.store.results import read_json

DATA = "data"  # the derived identity of the data a run simulated (see the module docstring)
DATA_FILE = "data.json"
FINGERPRINT = "data.fingerprint"  # where the fingerprint goes in a loaded config
DATA_DIR = "env.data_dir"
RELEASE = "env.release"
# Where the data were read from or cached, not what was simulated: never part of a group,
# a label or a swept setting (the data's identity is DATA).
LOCAL_PATHS = frozenset({DATA_DIR, "env.cache_dir"})
# Replaced by DATA in every identity: the release only matters when no folder was given.
DATA_SOURCE = frozenset({*LOCAL_PATHS, RELEASE, FINGERPRINT})
SHOWN_DIGITS = 8


def with_data(config: dict[str, Any], folder: Path) -> dict[str, Any]:
    """``config`` (flattened) with ``FINGERPRINT`` and ``DATA`` when it reads data."""
    fingerprint = _fingerprint(folder)
    config = dict(config)
    if fingerprint is not None:
        config[FINGERPRINT] = fingerprint
    if fingerprint is not None or DATA_DIR in config or RELEASE in config:
        config[DATA] = data_identity(config)
    return config


def data_identity(config: dict[str, Any]) -> str:
    """The data a run simulated: fingerprint, else local folder, else release."""
    if _given(config.get(FINGERPRINT)):
        return f"fingerprint:{config[FINGERPRINT]}"
    if _given(config.get(DATA_DIR)):
        return f"folder:{config[DATA_DIR]}"
    return f"release:{config.get(RELEASE)}"


def identity(config: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    """The key of equal runs: every setting but the data's source (``DATA`` stands for it)."""
    return tuple(sorted((k, v) for k, v in config.items() if k not in DATA_SOURCE))


def dataset(config: Any, short: bool = False) -> str:
    """The data a run used, for people: ``~/data/ml-100k [ratings 3f2a9c1e]``; ``short``:
    ``ml-1m``, ``ml-100k [3f2a9c1e]``, or without a fingerprint as the run folder names it."""
    folder, release, fingerprint = (config.get(k) for k in (DATA_DIR, RELEASE, FINGERPRINT))
    if short:
        if not _given(folder):
            return str(release) if _given(release) else "data"
        name = Path(os.path.expanduser(str(folder))).name or "root"
        if _given(fingerprint):
            return f"{name} [{str(fingerprint)[:SHOWN_DIGITS]}]"
        path = os.path.abspath(os.path.expanduser(str(folder)))
        return f"{name}-{hashlib.sha256(path.encode()).hexdigest()[:SHOWN_DIGITS]}"
    source = str(folder) if _given(folder) else str(release) if _given(release) else "data"
    if _given(fingerprint):
        return f"{source} [ratings {str(fingerprint)[:SHOWN_DIGITS]}]"
    return source


def _fingerprint(folder: Path) -> Any:
    """The ratings fingerprint recorded in the run folder's ``data.json``, else None."""
    record = read_json(folder / DATA_FILE)
    value = record.get("fingerprint") if isinstance(record, dict) else None
    return value if _given(value) else None


def _given(value: Any) -> bool:
    """Not None, NaN or empty."""
    return value is not None and value == value and value != ""
