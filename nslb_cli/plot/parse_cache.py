"""A cache of one run folder's parsed seed CSVs, beside them, never trusted over them.

``<run folder>/.nslb-plot-cache.npz`` holds what :func:`nslb_cli.plot.csvread.read_run`
made of the folder's CSVs (the checked columns, and the files it skipped with their
reasons) together with a *key*: each CSV's name, size, modification time (ns) and inode,
the ``env.horizon`` the files were checked against, and the cache format's version. It is
used only when its key equals the folder's current key and it holds every column asked
for; otherwise the folder's CSVs are parsed again and the cache is rewritten (through a
temporary file and a rename, so a reader never sees half of it). A cache that cannot be
read (damaged, another format) counts as absent. Writing is best effort: a read-only
results folder is simply not cached.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from nslb_cli.plot.csvread import Columns, Skipped

CACHE_FILE = ".nslb-plot-cache.npz"
VERSION = 1
Stamp = tuple[str, int, int, int]  # a CSV's name, size, mtime_ns and inode


def stamps(paths: Sequence[Path]) -> list[Stamp]:
    """The key of each file (a file that vanished gets an impossible stamp: never current)."""
    found = []
    for path in paths:
        try:
            info = path.stat()
        except OSError:
            found.append((path.name, -1, -1, -1))
            continue
        found.append((path.name, info.st_size, info.st_mtime_ns, info.st_ino))
    return found


def key(files: Sequence[Stamp], horizon: int | None) -> dict[str, object]:
    """What a cache must have been built from to be current."""
    return {"version": VERSION, "horizon": horizon, "files": [list(s) for s in sorted(files)]}


def read(
    folder: Path, current: dict[str, object], columns: Sequence[str]
) -> tuple[tuple[dict[int, Columns], list[Skipped]] | None, list[str]]:
    """The cached parse of ``folder`` (``None`` unless current and holding ``columns``) and
    the columns the cache file holds (empty when there is none or it is unreadable)."""
    try:
        with np.load(folder / CACHE_FILE, allow_pickle=False) as stored:
            manifest = json.loads(stored["manifest"].tobytes())
            held = list(manifest["columns"])
            if {k: manifest.get(k) for k in current} != current or not set(columns) <= set(held):
                return None, held
            seeds, lengths = stored["seeds"], stored["lengths"]
            arrays = {name: stored[name] for name in ("t", *columns)}
    except (OSError, ValueError, KeyError, TypeError, EOFError, zipfile.BadZipFile):
        return None, []
    stops = np.cumsum(lengths)
    if any(len(values) != (stops[-1] if len(stops) else 0) for values in arrays.values()):
        return None, held
    found = {
        int(seed): {name: values[stop - length : stop] for name, values in arrays.items()}
        for seed, stop, length in zip(seeds, stops, lengths, strict=True)
    }
    skipped = [Skipped(folder / name, reason) for name, reason in manifest["skipped"]]
    return (found, skipped), held


def write(
    folder: Path,
    current: dict[str, object],
    columns: Sequence[str],
    found: dict[int, Columns],
    skipped: Sequence[Skipped],
) -> None:
    """Store a parse of ``folder`` under ``current`` (best effort; errors are ignored)."""
    manifest = {
        **current,
        "columns": list(columns),
        "skipped": [[s.path.name, s.reason] for s in skipped],
    }
    seeds = sorted(found)
    arrays = {
        name: np.concatenate([found[seed][name] for seed in seeds])
        if seeds
        else np.array([], np.float32)
        for name in ("t", *columns)
    }
    index = {
        "manifest": np.frombuffer(json.dumps(manifest).encode(), dtype=np.uint8),
        "seeds": np.array(seeds, dtype=np.int64),
        "lengths": np.array([len(found[seed]["t"]) for seed in seeds], dtype=np.int64),
    }
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f"{CACHE_FILE}.", suffix=".tmp")
    except OSError:
        return
    try:
        with contextlib.suppress(OSError), os.fdopen(fd, "wb") as handle:
            payload: dict[str, Any] = {**index, **arrays}
            np.savez(handle, **payload)
            handle.close()
            os.replace(tmp, folder / CACHE_FILE)
    finally:
        Path(tmp).unlink(missing_ok=True)  # left only when writing failed
