"""A cache of one run folder's parsed seed CSVs, beside them, never trusted over them.

``<run folder>/.nslb-plot-cache.npz`` holds what :func:`nslb_cli.plot.csvread.read_run`
made of the folder's CSVs (the checked columns, and the files it skipped with their
reasons) together with a *key*: each CSV's name, size, modification time (ns) and inode,
the ``env.horizon`` the files were checked against, and the cache format's version. It is
used only when its key equals the folder's current key and it holds every column asked
for; otherwise the folder's CSVs are parsed again and the cache is rewritten.

The cache heals itself; it never has to be deleted by hand (nor ``--no-cache`` used):

* It is written through :func:`nslb_cli.store.atomic.atomic_write` (a temporary file,
  fsynced, renamed), so a reader never sees half of it. Writing is best effort: a read-only
  results folder is silently not cached; any other failure (a full disk, a quota) says so
  in one warning line per process and the plot goes on.
* The file is *sealed*: its zip comment holds the CRC-32 of every byte before it. A cache
  that cannot be read, or whose seal or contents do not check out (the manifest's keys and
  types, the columns it lists, the arrays' dtypes and lengths), is reported in one warning
  line and parsed again from the CSVs, and the cache is rewritten. A cache of an earlier
  format (unsealed) is parsed again silently.
"""

from __future__ import annotations

import errno
import io
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from nslb_cli.plot.csvread import COMPACT, Columns, Skipped
from nslb_cli.store.atomic import atomic_write
from nslb_cli.store.sealed import DamagedCache, cause, sealed, write_sealed

CACHE_FILE = ".nslb-plot-cache.npz"
VERSION = 2  # 2: sealed, with the arrays' dtypes in the manifest
Stamp = tuple[str, int, int, int]  # a CSV's name, size, mtime_ns and inode
READ_ONLY = frozenset({errno.EACCES, errno.EPERM, errno.EROFS})
"""Write errors of a folder that cannot be written at all: not cached, silently."""
_warned_write: list[str] = []  # the one warning of this process about writing a cache


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


def key(
    files: Sequence[Stamp], horizon: int | None, result: str | None = None
) -> dict[str, object]:
    """What a cache must have been built from to be current: the files (the seed CSVs and
    their records), the horizon and the result key of the folder's ``config.yaml`` (which
    seeds are skipped as another config's depends on both)."""
    return {
        "version": VERSION,
        "horizon": horizon,
        "result": result,
        "files": [list(s) for s in sorted(files)],
    }


def read(
    folder: Path, current: dict[str, object], columns: Sequence[str]
) -> tuple[tuple[dict[int, Columns], list[Skipped]] | None, list[str]]:
    """The cached parse of ``folder`` (``None`` unless current and holding ``columns``) and
    the columns the cache file holds (empty when there is none or it is unusable)."""
    path = folder / CACHE_FILE
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None, []
    except Exception as err:
        warn(f"cannot read the cache {path} ({cause(err)}): parsing the CSVs again")
        return None, []
    try:
        if not sealed(raw):
            return None, []  # an earlier format: parsed again and rewritten
        with np.load(io.BytesIO(raw), allow_pickle=False) as stored:
            manifest = _manifest(json.loads(stored["manifest"].tobytes()))
            held = list(manifest["columns"])
            if {k: manifest.get(k) for k in current} != current or not set(columns) <= set(held):
                return None, held
            seeds, lengths = stored["seeds"], stored["lengths"]
            arrays = {name: stored[name] for name in ("t", *columns)}
        found = _split(seeds, lengths, arrays, manifest["dtypes"])
    except Exception as err:  # anything at all: parsed again, never trusted
        warn(f"damaged cache {path} ({cause(err)}): parsing the CSVs again")
        return None, []
    skipped = [Skipped(folder / name, reason) for name, reason in manifest["skipped"]]
    return (found, skipped), held


def _manifest(manifest: Any) -> dict[str, Any]:
    """``manifest`` if it has every key, of the types :func:`write` gives them."""
    if not isinstance(manifest, dict):
        raise DamagedCache("its manifest is not a mapping")
    for name, kind in (("files", list), ("columns", list), ("skipped", list), ("dtypes", dict)):
        if not isinstance(manifest.get(name), kind):
            raise DamagedCache(f"its manifest has no {name}")
    columns = manifest["columns"]
    if not all(isinstance(c, str) for c in columns) or len(set(columns)) != len(columns):
        raise DamagedCache("its manifest's columns are not distinct names")
    if not all(
        isinstance(s, list) and len(s) == 2 and all(isinstance(v, str) for v in s)
        for s in manifest["skipped"]
    ):
        raise DamagedCache("its manifest's skipped files are not (name, reason) pairs")
    if set(manifest["dtypes"]) != {"t", *columns}:
        raise DamagedCache("its manifest's dtypes are not those of its columns")
    return manifest


def _split(
    seeds: np.ndarray, lengths: np.ndarray, arrays: dict[str, np.ndarray], dtypes: dict[str, Any]
) -> dict[int, Columns]:
    """``{seed: {column: values}}`` from the concatenated ``arrays``, checked consistent."""
    if seeds.ndim != 1 or seeds.dtype != np.int64 or lengths.dtype != np.int64:
        raise DamagedCache("its seeds are not a list of integers")
    if lengths.shape != seeds.shape or (lengths < 0).any() or len(np.unique(seeds)) != len(seeds):
        raise DamagedCache("its seeds and lengths do not match")
    stops = np.cumsum(lengths)
    total = int(stops[-1]) if len(stops) else 0
    for name, values in arrays.items():
        if values.ndim != 1 or values.dtype.str != dtypes[name] or len(values) != total:
            raise DamagedCache(f"its column {name} is not {total} values of {dtypes[name]}")
    return {
        int(seed): {name: values[stop - length : stop] for name, values in arrays.items()}
        for seed, stop, length in zip(seeds, stops, lengths, strict=True)
    }


def write(
    folder: Path,
    current: dict[str, object],
    columns: Sequence[str],
    found: dict[int, Columns],
    skipped: Sequence[Skipped],
) -> None:
    """Store a parse of ``folder`` under ``current`` (best effort: a read-only folder is not
    cached; any other failure is one warning line per process)."""
    seeds = sorted(found)
    arrays = {
        name: np.concatenate([found[seed][name] for seed in seeds])
        if seeds
        else np.array([], COMPACT[name])
        for name in ("t", *columns)
    }
    manifest = {
        **current,
        "columns": list(columns),
        "skipped": [[s.path.name, s.reason] for s in skipped],
        "dtypes": {name: values.dtype.str for name, values in arrays.items()},
    }
    index = {
        "manifest": np.frombuffer(json.dumps(manifest).encode(), dtype=np.uint8),
        "seeds": np.array(seeds, dtype=np.int64),
        "lengths": np.array([len(found[seed]["t"]) for seed in seeds], dtype=np.int64),
    }
    buffer = io.BytesIO()
    payload: dict[str, Any] = {**index, **arrays}
    np.savez(buffer, **payload)
    path = folder / CACHE_FILE
    try:
        atomic_write(path, lambda handle: write_sealed(handle, buffer.getbuffer()))
    except OSError as err:
        if err.errno in READ_ONLY:
            return
        if not _warned_write:
            _warned_write.append(str(path))
            warn(
                f"cannot write the cache {path} ({cause(err)}): "
                "the CSVs will be parsed again next time"
            )


def warn(message: str) -> None:
    """One line on stderr for ``nslb plot`` (this cache's and :mod:`nslb_cli.plot.report`'s)."""
    print(f"nslb plot: {message}", file=sys.stderr)
