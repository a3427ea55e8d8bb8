"""numba for nslb: the decorators of every compiled function, and where their code is cached.

numba caches a compiled function on disk and compiles it again only when *its own* source
file changes. A kernel that calls a function of another module keeps, in its cache, the
code of that callee as it was: after an edit of the callee (or a ``git pull`` of a new
nslb) it would run the old code, silently. So nslb's compiled code is cached in a folder of
its own, named after a hash of every module holding compiled functions
(:data:`KERNEL_MODULES`) and of numba's version: any change to any of them starts from an
empty cache (compiling everything takes ~15 s once), and switching back to a version
already compiled finds its cache again. A new version's first import keeps the
:data:`KEEP` - 1 folders written last and removes older ones (~8 MB each).

The folder is ``<cache>/numba/<hash>``, with ``<cache>`` the user cache folder of
:mod:`nslb_cli.data.releases` (``$NSLB_CACHE`` or the platform's, e.g. ``~/.cache/nslb``).
It is set in numba's config when this module is imported, before any of nslb's functions is
decorated; it is numba's cache folder for the whole process.

Import this module only from modules that compile: importing numba costs 0.3–0.6 s.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import numba

from nslb_cli.paths import user_cache

PACKAGE = Path(__file__).resolve().parent
KERNEL_MODULES = (
    "compiled.py",
    "generator_list.py",
    "reward_kernels.py",
    "agents/jit.py",
    "agents/linalg.py",
    "agents/linear_kernels.py",
    "agents/linear_posterior.py",
    "agents/particle_filter.py",
    "agents/pool.py",
    "agents/posteriors.py",
    "agents/resampling.py",
)
"""Every module of the package with compiled functions, relative to the package folder."""
KEEP = 8
"""Versions of compiled code kept in the cache, the current one included."""


def sources_hash() -> str:
    """A hash of numba's version and of the source of every :data:`KERNEL_MODULES`."""
    digest = hashlib.sha256(numba.__version__.encode())
    for name in KERNEL_MODULES:
        digest.update(name.encode() + b"\0" + (PACKAGE / name).read_bytes())
    return digest.hexdigest()[:16]


def prune(root: Path, keep: int) -> None:
    """Remove every version folder of ``root`` but the ``keep`` written last (best effort:
    another process may be removing them too)."""
    versions = []
    for folder in root.glob("*/"):
        try:
            versions.append((folder.stat().st_mtime, folder))
        except OSError:
            continue
    for _, old in sorted(versions, reverse=True)[keep:]:
        shutil.rmtree(old, ignore_errors=True)


CACHE = user_cache() / "numba" / sources_hash()
if not CACHE.is_dir():
    prune(CACHE.parent, KEEP - 1)
numba.config.CACHE_DIR = str(CACHE)

jit = numba.njit(cache=True)
"""Compile a function, cached on disk (the default for nslb's kernels)."""

inline = numba.njit(cache=True, inline="always")
"""Compile a small helper that numba inlines into each compiled caller."""
