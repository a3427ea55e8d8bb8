"""The JAX engine's compiled programs on disk: JAX's persistent compilation cache in nslb's
cache folder (``<cache>/jax/<JAX version>``, ``<cache>`` as for numba's kernels), every
program kept (no minimum compile time), and announced like numba's kernels: the first time
a program is compiled, one line says so.

Which programs were compiled is kept in ``programs.txt`` beside JAX's entries (a line a
program: its world, agent, batch size and backend). JAX reads an entry it cannot use as a
miss and compiles again, so a damaged cache costs a compilation, never a wrong result; an
unwritable cache folder leaves JAX's in-memory cache only, announced as for this process.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import jax

from nslb_cli.common.paths import unwritable, user_cache

INDEX = "programs.txt"
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
        else:
            _configured.append(None)
    return _configured[0]


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
