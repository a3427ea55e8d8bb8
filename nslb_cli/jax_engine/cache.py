"""The JAX engine's compiled programs on disk: JAX's persistent compilation cache in nslb's
cache folder (``<cache>/jax/<JAX version>``, ``<cache>`` as for numba's kernels), every
program kept (no minimum compile time), and announced like numba's kernels: the first time
a program is compiled, one line says so.

Which programs were compiled is kept in ``programs.txt`` beside JAX's entries (a line a
program: its world, agent, batch size and backend), and what each entry held when it was
written in ``entries.json`` (its size, modification time and SHA-256). JAX reads an entry it
cannot use as a miss, warns and compiles again, every run, without replacing the entry; so
nslb removes an entry whose bytes are no longer those recorded before JAX reads it, says so
in one line, and JAX's next compilation writes it anew. An unwritable cache folder leaves
JAX's in-memory cache only, announced as for this process.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any

import jax

from nslb_cli.common.paths import unwritable, user_cache

INDEX = "programs.txt"
MANIFEST = "entries.json"
ENTRIES = "*-cache"  # JAX's entry files
_configured: list[Path | None] = []


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
    time, then its SHA-256, tells), and say so in one line."""
    manifest, damaged = _recorded(path), 0
    for entry in sorted(path.glob(ENTRIES)):
        kept = manifest.get(entry.name)
        if not (isinstance(kept, list) and len(kept) == 3):
            continue  # not written through nslb's engine yet: recorded when it is
        try:
            stat = entry.stat()
            if kept[:2] == [stat.st_size, stat.st_mtime_ns]:
                continue
            if _digest(entry) == kept[2]:  # touched, not changed
                manifest[entry.name] = [stat.st_size, stat.st_mtime_ns, kept[2]]
                continue
            entry.unlink()
        except OSError:
            continue
        del manifest[entry.name]
        damaged += 1
    if damaged:
        _save(path, manifest)
        print(f"nslb: removed {damaged} damaged entries of the JAX compilation cache in "
              f"{path}; their programs compile again, once", file=sys.stderr)  # fmt: skip


def record() -> None:
    """Record the entries JAX wrote since the manifest was last saved (after a program ran)."""
    path = folder()
    if path is None:
        return
    manifest = _recorded(path)
    new = [entry for entry in path.glob(ENTRIES) if entry.name not in manifest]
    for entry in new:
        try:
            stat = entry.stat()
            manifest[entry.name] = [stat.st_size, stat.st_mtime_ns, _digest(entry)]
        except OSError:
            continue
    if new:
        _save(path, manifest)


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
