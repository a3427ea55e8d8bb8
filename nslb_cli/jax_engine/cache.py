"""The JAX engine's compiled programs on disk: JAX's persistent compilation cache in nslb's
cache folder (``<cache>/jax/<JAX version>``, ``<cache>`` as for numba's kernels), every
program kept (no minimum compile time), and announced like numba's kernels: the first time
a program is compiled, one line says so.

Which programs were compiled is kept in ``programs.txt`` beside JAX's entries (a line a
program: its world, agent, batch size and backend), and what each entry held when this
process's JAX wrote it in ``entries.json`` (its size, modification time and SHA-256). JAX
reads an entry it cannot use as a miss, warns and compiles again, every run, without
replacing the entry; so, before JAX reads any, nslb removes the entries whose bytes are no
longer those recorded, and those never recorded that are older than ``GRACE`` (a cache
from before the manifest, or a write cut short), says so in one line, and JAX's next
compilation writes them anew. Processes sharing the cache may record or remove each other's
fresh entries; the worst that costs is a compilation, never a result. An unwritable cache
folder leaves JAX's in-memory cache only, announced as for this process.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import jax

from nslb_cli.common.paths import unwritable, user_cache

INDEX = "programs.txt"
MANIFEST = "entries.json"
ENTRIES = "*-cache"  # JAX's entry files
GRACE = 3600.0  # seconds: an unrecorded entry younger than this may be another run's, mid-run
_configured: list[Path | None] = []
_STARTED = time.time_ns()  # entries modified since were written by this process's JAX (or a peer)


def folder() -> Path | None:
    """The cache folder of this JAX version, configured into JAX on first use; ``None``
    when it cannot be written."""
    if not _configured:
        path = user_cache() / "jax" / jax.__version__
        if unwritable(path) is None:
            path.mkdir(parents=True, exist_ok=True)
            jax.config.update("jax_compilation_cache_dir", str(path))
            jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
            jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
            _configured.append(path)
            heal(path)
        else:
            _configured.append(None)
    return _configured[0]


def _recorded(path: Path) -> dict[str, list[Any]]:
    """``entries.json``: entry name -> ``[size, mtime_ns, sha256]``; empty if unreadable."""
    try:
        manifest = json.loads((path / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return {}
    return manifest if isinstance(manifest, dict) else {}


def _save(path: Path, manifest: dict[str, list[Any]]) -> None:
    temporary = path / f".{MANIFEST}.{os.getpid()}"
    try:
        temporary.write_text(json.dumps(manifest), encoding="utf-8")
        os.replace(temporary, path / MANIFEST)
    except OSError:
        temporary.unlink(missing_ok=True)  # a manifest not kept: entries unchecked, not lost


def _digest(entry: Path) -> str:
    return hashlib.sha256(entry.read_bytes()).hexdigest()


def heal(path: Path) -> None:
    """Remove each entry of ``path`` whose bytes differ from those recorded (a changed size or
    time, then its SHA-256, tells) or that was never recorded and is older than
    ``GRACE``; say so in one line."""
    manifest, removed = _recorded(path), 0
    for entry in sorted(path.glob(ENTRIES)):
        try:
            stat, kept = entry.stat(), manifest.get(entry.name)
            if kept is None:
                if time.time() - stat.st_mtime < GRACE:
                    continue  # another run's, recorded when it ends
            elif kept[:2] == [stat.st_size, stat.st_mtime_ns] or _digest(entry) == kept[2]:
                continue
            entry.unlink()
        except (OSError, TypeError, IndexError):
            continue
        manifest.pop(entry.name, None)
        removed += 1
    if removed:
        _save(path, manifest)
        entries = "1 damaged entry" if removed == 1 else f"{removed} damaged entries"
        said = f"removed {entries} of the JAX compilation cache in {path}; their programs compile"
        print(f"nslb: {said} again, once", file=sys.stderr)


def record() -> None:
    """Record the entries that JAX wrote since this process started, and forget the records of
    entries that are gone."""
    path = folder()
    if path is None:
        return
    manifest = _recorded(path)
    entries = {entry.name: entry for entry in path.glob(ENTRIES)}
    changed = {name for name in manifest if name not in entries}
    for name, entry in entries.items():
        try:
            stat = entry.stat()
            fresh = stat.st_mtime_ns >= _STARTED
            if fresh and manifest.get(name, [None, None])[:2] != [stat.st_size, stat.st_mtime_ns]:
                manifest[name] = [stat.st_size, stat.st_mtime_ns, _digest(entry)]
                changed.add(name)
        except OSError:
            continue
    if changed:
        _save(path, {name: kept for name, kept in manifest.items() if name in entries})


def announce(program: str, label: str, quiet: bool = False) -> None:
    """Say that ``label``'s program is being compiled if ``program`` (its description) was
    never compiled into this cache (unless ``quiet``: ``nslb warmup``), and record it."""
    path = folder()
    line = hashlib.sha256(f"{program}|{jax.default_backend()}".encode()).hexdigest()[:24]
    index = path / INDEX if path is not None else None
    try:
        known = index is not None and line in index.read_text(encoding="utf-8").split()
    except (OSError, UnicodeDecodeError):
        known = False
    if known:
        return
    kept = (
        "once (then cached; `nslb warmup --engine jax` compiles the presets' programs in advance)"
    )
    where = kept if path is not None else "for this process (the cache cannot be written)"
    if not quiet:
        print(f"nslb: compiling the JAX program of {label} {where}", file=sys.stderr)
    if index is not None:
        try:
            with index.open("a", encoding="utf-8") as out:
                out.write(line + "\n")
        except OSError:
            pass
