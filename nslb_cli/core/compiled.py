"""numba for nslb: the decorators of every compiled function, and where their code is cached.

numba caches a compiled function on disk and compiles it again only when *its own* source
file changes. A kernel that calls a function of another module (or reads one of its
constants) keeps, in its cache, that callee as it was: after an edit of the callee (or a
``git pull`` of a new nslb) it would run the old code, silently. So nslb's compiled code is
cached in a folder of its own, named after a hash of numba's version and of every module
that compiled code depends on (:data:`KERNEL_MODULES`: the modules with compiled functions
and every nslb module they import). Any change to any of them starts from an empty cache
(compiling the multi-armed umTS kernels takes ~15 s), and switching back to a version
already compiled finds its cache again. A new version's first import keeps the
:data:`KEEP` - 1 folders used last and removes older ones (~8 MB each).

The folder is ``<root>/<hash>``: ``<root>`` is ``$NUMBA_CACHE_DIR/nslb`` when that is set,
else ``<cache>/numba`` with ``<cache>`` nslb's user cache folder (``$NSLB_CACHE`` or the
platform's, e.g. ``~/.cache/nslb``). A cache locator that numba asks first handles nslb's
own functions only: other numba code in the process is cached where numba would cache it.
If the folder cannot be written, nslb's kernels are cached in a temporary folder for the
process (compiled again by every process, never stale) and a one-line warning says so.

Import this module only from modules that compile: importing numba costs 0.3–0.6 s.
"""

from __future__ import annotations

import ast
import atexit
import contextlib
import hashlib
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import numba
from numba.core import caching

from nslb_cli.config.paths import user_cache

PACKAGE = Path(__file__).resolve().parents[1]
"""The ``nslb_cli`` folder; module paths below are relative to it."""
_COMPILES = re.compile(r"^\s*from nslb_cli\.core(\.compiled import| import compiled\b)", re.M)


def _nslb_imports(source: str) -> set[str]:
    """The files of the package that ``source`` imports (anywhere in it)."""
    found: set[str | None] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("nslb_cli"):
            names = [f"{node.module}.{alias.name}" for alias in node.names]
            found |= {_module_file(name) or _module_file(str(node.module)) for name in names}
        elif isinstance(node, ast.Import):
            found |= {_module_file(a.name) for a in node.names if a.name.startswith("nslb_cli")}
    return {name for name in found if name is not None}


def _module_file(name: str) -> str | None:
    """``nslb_cli.a.b`` -> ``a/b.py`` or ``a/b/__init__.py``; ``None`` for a name in a module."""
    parts = name.split(".")[1:]
    for candidate in ("/".join(parts) + ".py", "/".join([*parts, "__init__.py"])):
        if (PACKAGE / candidate).is_file():
            return candidate
    return None


def kernel_modules() -> tuple[str, ...]:
    """The modules compiled code depends on: those that import this module (they hold
    compiled functions) and every nslb module they import, directly or not; sorted paths
    relative to :data:`PACKAGE`."""
    sources = {p.relative_to(PACKAGE).as_posix(): p for p in sorted(PACKAGE.rglob("*.py"))}
    todo = [name for name, path in sources.items() if _COMPILES.search(path.read_text())]
    closure: set[str] = set()
    while todo:
        name = todo.pop()
        if name not in closure:
            closure.add(name)
            todo.extend(_nslb_imports(sources[name].read_text()))
    return tuple(sorted(closure))


KERNEL_MODULES = kernel_modules()
KEEP = 8
"""Versions of compiled code kept in the cache, the current one included."""
# numba's caching classes, public names since 0.6x (underscored before)
_LOCATOR: Any = getattr(caching, "UserProvidedCacheLocator", None)
_LOCATOR = _LOCATOR or caching._UserProvidedCacheLocator  # type: ignore[attr-defined]
_IMPL: Any = getattr(caching, "CacheImpl", None) or caching._CacheImpl  # type: ignore[attr-defined]


def sources_hash() -> str:
    """A hash of numba's version and of the source of every :data:`KERNEL_MODULES`."""
    digest = hashlib.sha256(numba.__version__.encode())
    for name in KERNEL_MODULES:
        digest.update(name.encode() + b"\0" + (PACKAGE / name).read_bytes())
    return digest.hexdigest()[:16]


def cache_root() -> Path:
    """The folder that holds one cache folder per version of the kernels."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return Path(os.environ["NUMBA_CACHE_DIR"]).expanduser().absolute() / "nslb"
    return user_cache() / "numba"


def prune(root: Path, keep: int) -> None:
    """Remove every version folder of ``root`` but the ``keep`` used last (best effort:
    another process may be removing them too)."""
    versions = []
    for folder in root.glob("*/"):
        try:
            versions.append((folder.stat().st_mtime, folder))
        except OSError:
            continue
    for _, old in sorted(versions, reverse=True)[keep:]:
        shutil.rmtree(old, ignore_errors=True)


CACHE = cache_root() / sources_hash()
_scratch: list[Path] = []  # the process's temporary cache, when CACHE cannot be written


def _temporary_cache(reason: OSError) -> Path:
    """A cache folder for this process only (removed at exit), after saying why once."""
    if not _scratch:
        _scratch.append(Path(tempfile.mkdtemp(prefix="nslb-numba-")))
        atexit.register(shutil.rmtree, _scratch[0], ignore_errors=True)
        print(
            f"nslb: warning: cannot write the compiled-code cache {CACHE} "
            f"({reason.strerror or reason}): kernels are compiled again in every process; "
            "set NSLB_CACHE to a writable folder",
            file=sys.stderr,
        )
    return _scratch[0]


class VersionedLocator(_LOCATOR):
    """numba's cache locator for nslb's own compiled functions: :data:`CACHE`."""

    def __init__(self, py_func: Any, py_file: str) -> None:
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        self._cache_path = str(CACHE / self.get_suitable_cache_subpath(py_file))

    @classmethod
    def from_function(cls, py_func: Any, py_file: str) -> VersionedLocator | None:
        if not Path(py_file).resolve().is_relative_to(PACKAGE):
            return None  # not nslb's: numba's own locators decide
        locator = cls(py_func, py_file)
        try:
            locator.ensure_cache_path()
        except OSError as err:
            locator._cache_path = str(_temporary_cache(err))
        return locator


if VersionedLocator not in _IMPL._locator_classes:
    _IMPL._locator_classes.insert(0, VersionedLocator)
if CACHE.is_dir():
    with contextlib.suppress(OSError):
        os.utime(CACHE)  # in use: the last folder that pruning would remove
else:
    prune(CACHE.parent, KEEP - 1)

jit = numba.njit(cache=True)
"""Compile a function, cached on disk (the default for nslb's kernels)."""

inline = numba.njit(cache=True, inline="always")
"""Compile a small helper that numba inlines into each compiled caller."""
