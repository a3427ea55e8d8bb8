"""numba for nslb: the decorators of every compiled function, and where their code is cached.

numba caches a compiled function on disk and compiles it again only when *its own* source
file changes. A kernel that calls a function of another module (or reads one of its
constants) keeps, in its cache, that callee as it was: after an edit of the callee (or a
``git pull`` of a new nslb) it would run the old code, silently. So nslb's compiled code is
cached in a folder of its own, named after a hash of numba's version and of every module
that compiled code depends on (``KERNEL_MODULES``: the modules with compiled functions
and every nslb module they import). Any change to any of them starts from an empty cache
(compiling the multi-armed umTS kernels takes ~15 s), and switching back to a version
already compiled finds its cache again. A new version's first import keeps the
``KEEP`` - 1 folders used last and removes older ones (~8 MB each).

The folder is ``<root>/<hash>``: ``<root>`` is ``$NUMBA_CACHE_DIR/nslb`` when that is set,
else ``<cache>/numba`` with ``<cache>`` nslb's user cache folder (``$NSLB_CACHE`` or the
platform's, e.g. ``~/.cache/nslb``). A cache locator that numba asks first handles nslb's
own functions only: other numba code in the process is cached where numba would cache it.
If the folder cannot be written, nslb's kernels are cached in a temporary folder for the
process (compiled again by every process, never stale) and a one-line warning says so.

The cache heals itself (``HealingCache``, which ``jit`` and ``inline`` give every
compiled function in place of numba's own): each cache file ends in a CRC-32 of its contents,
checked before numba unpickles anything from it. A file that cannot be loaded (damaged,
truncated, garbage; any error while loading) gives one warning line, is removed, and the
function is compiled again and saved afresh; a save that fails (a full disk, a quota) gives
one warning line naming the cache folder, and the process goes on with the code compiled in
memory. Never a traceback, never a folder to delete by hand.

Import this module only from modules that compile: importing numba costs 0.3–0.6 s.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import hashlib
import io
import os
import pickle
import re
import shutil
import sys
import tempfile
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numba
from numba.core import caching
from numba.core.runtime import rtsys

from nslb_cli.common.paths import user_cache

PACKAGE = Path(__file__).resolve().parents[1]
"""The ``nslb_cli`` folder; module paths below are relative to it."""
_COMPILES = re.compile(r"^\s*from nslb_cli\.compiled(\.jit import| import jit\b)", re.M)


_IMPORTS = re.compile(
    r"^[ \t]*(?:from[ \t]+(nslb_cli[\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n]*)"
    r"|import[ \t]+([^\n]*))",
    re.M,
)


def _nslb_imports(source: str) -> set[str]:
    """The files of the package that ``source`` imports (anywhere in it).

    Read from the text with ``_IMPORTS`` rather than parsed (parsing every module cost
    0.15 s at each start of a process that compiles): an import statement quoted in a
    docstring counts too, which can only add a module to the hash, never leave one out.
    """
    found: set[str | None] = set()
    for module, names, plain in _IMPORTS.findall(source):
        if module:
            for name in _names(names):
                found.add(_module_file(f"{module}.{name}") or _module_file(module))
        else:
            found |= {_module_file(name) for name in _names(plain) if name.startswith("nslb_cli")}
    return {name for name in found if name is not None}


def _names(clause: str) -> list[str]:
    """The imported names of an import clause (``a as b, c`` or ``(a,\n b)``), aliases and
    comments dropped."""
    lines = [line.split("#")[0] for line in clause.strip("()").splitlines()]
    return [part.split()[0] for part in " ".join(lines).split(",") if part.strip()]


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
    relative to ``PACKAGE``."""
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
    """A hash of numba's version and of the source of every ``KERNEL_MODULES``."""
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


def cache_kept() -> bool:
    """Whether the code this process compiled is kept in ``CACHE`` for later processes
    (not when the folder could not be written, nor when a save failed)."""
    return not _scratch and "save" not in _warned


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
    """numba's cache locator for nslb's own compiled functions: ``CACHE``."""

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
            if os.access(locator._cache_path, os.R_OK | os.X_OK):  # a read-only cache: used
                _warn_once(
                    "save",
                    f"cannot write the compiled-code cache {CACHE} ({err.strerror or err}): "
                    "the kernels in it are used, others are compiled again in every process; "
                    "set NSLB_CACHE to a writable folder",
                )
            else:
                locator._cache_path = str(_temporary_cache(err))
        return locator


class DamagedCacheFile(Exception):
    """A compiled-code cache file that cannot be used (``path``, and why: ``cause``)."""

    def __init__(self, path: str, cause: str) -> None:
        super().__init__(f"{path}: {cause}")
        self.path = path
        self.cause = cause


_SEAL = b"nslb-crc32:"  # the end of each cache file: this tag, then the CRC-32 of all before it
_SEAL_SIZE = len(_SEAL) + 8
_warned: set[str] = set()  # the warnings this process has given (each kind once)


def _warn_once(kind: str, message: str) -> None:
    if kind not in _warned:
        _warned.add(kind)
        print(f"nslb: warning: {message}", file=sys.stderr)


_announced: set[str] = set()  # the families of kernels this process said it compiles


def compile_quietly() -> None:
    """Say nothing more in this process of the kernels compiled: ``nslb warmup``, which
    compiles them all, reports its own progress."""
    _announced.add("*")


def _announce(module: str) -> None:
    """Say once per process and family (``agents.umts``, ``bandit.reward_kernels``…) that its
    kernels are being compiled: the first run of a new version waits seconds per family."""
    family = ".".join(module.split(".")[1:3])
    if family not in _announced and "*" not in _announced:
        _announced.add(family)
        kept = (
            "once for this version of nslb (then cached; `nslb warmup` compiles every kernel "
            "in advance)"
            if cache_kept()
            else "for this process (the cache cannot be written)"
        )
        print(f"nslb: compiling {family} kernels {kept}", file=sys.stderr)


def _cause(err: BaseException) -> str:
    """One line saying what ``err`` was (its type when it says nothing more)."""
    if isinstance(err, DamagedCacheFile):
        return err.cause
    text = (err.strerror if isinstance(err, OSError) else None) or str(err)
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line[:200] or type(err).__name__


def _unsealed(raw: bytes, path: str) -> memoryview:
    """The contents of a sealed cache file ``raw`` (read from ``path``), seal checked."""
    if len(raw) < _SEAL_SIZE or raw[-_SEAL_SIZE:-8] != _SEAL:
        raise DamagedCacheFile(path, "truncated or not an nslb cache file" if raw else "empty")
    try:
        stored = int(raw[-8:], 16)
    except ValueError:
        stored = -1
    body = memoryview(raw)[:-_SEAL_SIZE]
    if stored != zlib.crc32(_SEAL, zlib.crc32(body)):
        raise DamagedCacheFile(path, "checksum mismatch")
    return body


class SealedCacheFile(caching.IndexDataCacheFile):
    """numba's index (``.nbi``) and data (``.nbc``) files of one function, each written with a
    seal at its end (a CRC-32 of the rest), checked before anything in it is unpickled.

    Writing goes through numba's own ``_open_for_write`` (a temporary file, then a rename),
    which this class wraps; reading the index is numba's own ``_load_index`` once the seal
    is checked (pickle ignores the bytes after a pickle, so numba's reader reads a sealed
    file as it is). A file that fails its check raises ``DamagedCacheFile``;
    ``reading`` is the file read last (the one at fault when loading fails later).
    """

    reading: str | None = None

    @contextlib.contextmanager
    def _open_for_write(self, filepath: str) -> Iterator[Any]:
        buffer = io.BytesIO()
        yield buffer
        body = buffer.getbuffer()
        with super()._open_for_write(filepath) as handle:
            handle.write(body)
            handle.write(_SEAL + b"%08x" % zlib.crc32(_SEAL, zlib.crc32(body)))

    def _load_index(self) -> Any:
        path = self.reading = self._index_path
        try:
            with open(path, "rb") as handle:
                raw = handle.read()
        except FileNotFoundError:
            return {}
        _unsealed(raw, path)
        try:
            return super()._load_index()
        except Exception as err:  # sealed, yet unreadable (or replaced meanwhile)
            raise DamagedCacheFile(path, _cause(err)) from err

    def _load_data(self, name: str) -> Any:
        path = self.reading = self._data_path(name)
        with open(path, "rb") as handle:  # OSError: gone, a cache miss (numba's own rule)
            raw = handle.read()
        body = _unsealed(raw, path)
        try:
            return pickle.loads(body)
        except Exception as err:
            raise DamagedCacheFile(path, _cause(err)) from err


class HealingCache(caching.FunctionCache):
    """numba's cache of one compiled function, healing itself.

    Its files are sealed (``SealedCacheFile``). Loading a compiled function that fails in
    any way (a damaged, truncated or foreign file; any error while rebuilding it) gives one
    warning line per process, removes the file at fault and returns ``None``: numba compiles
    the function again and saves good files. A save that fails with ``OSError`` (a full
    disk, a quota) gives one warning line per process naming the cache folder; the process
    goes on with the function it compiled in memory.
    """

    _cache_file: SealedCacheFile

    def __init__(self, py_func: Any) -> None:
        super().__init__(py_func)
        self._cache_file = SealedCacheFile(
            cache_path=self._cache_path,
            filename_base=self._impl.filename_base,
            source_stamp=self._impl.locator.get_source_stamp(),
        )

    def load_overload(self, sig: Any, target_context: Any) -> Any:
        """The cached function of ``sig``, or ``None``. Unlike numba's own, loading does not
        refresh ``target_context`` (importing and installing numba's every lowering
        registry: 0.09 s of the first load of each process, measured): machine code read
        from the cache needs numba's runtime only, and compiling refreshes the context
        itself."""
        self._cache_file.reading = None
        try:
            rtsys.initialize(target_context)
            with self._guard_against_spurious_io_errors():
                loaded = self._load_overload(sig, target_context)
            if loaded is None:
                _announce(self._py_func.__module__)
            return loaded
        except Exception as err:
            if isinstance(err, DamagedCacheFile):
                path = err.path
            else:  # e.g. rebuilding the compiled code failed: the file read last is at fault
                path = self._cache_file.reading or self._index_file()
            with contextlib.suppress(OSError):
                os.unlink(path)  # numba writes a good one after compiling
            _warn_once(
                "damaged",
                f"damaged compiled-code cache {path} ({_cause(err)}): compiling again",
            )
            return None

    def save_overload(self, sig: Any, data: Any) -> None:
        """Save under an ``flock`` of the folder's ``.save.lock``: processes that compile one
        function at once would each rewrite its index from a copy read before the others'."""
        for attempt in range(2):
            try:
                with open(Path(self._cache_path, ".save.lock"), "a") as lock:
                    fcntl.flock(lock, fcntl.LOCK_EX)
                    super().save_overload(sig, data)
                return
            except DamagedCacheFile as err:  # damaged since it was loaded (another process)
                with contextlib.suppress(OSError):
                    os.unlink(err.path)
                _warn_once("damaged", f"damaged compiled-code cache {err.path} ({err.cause})")
                if attempt:
                    return
            except OSError as err:
                _warn_once(
                    "save",
                    f"cannot save compiled code in the cache folder {self._cache_path} "
                    f"({_cause(err)}): it is compiled again by the next process",
                )
                return

    def _index_file(self) -> str:
        """The function's index file (numba's name for it)."""
        return str(getattr(self._cache_file, "_index_path", self._cache_path))


_HEALS = all(
    callable(getattr(caching.IndexDataCacheFile, name, None))
    for name in ("_open_for_write", "_load_index", "_load_data", "_data_path")
)
"""Whether this numba's cache files have the methods ``SealedCacheFile`` wraps."""


def _cached(options: dict[str, Any]) -> Callable[[Callable[..., Any]], Any]:
    """A decorator compiling a function with numba's ``options``, cached by
    ``HealingCache``."""
    compile_ = numba.njit(**options)

    def decorate(func: Callable[..., Any]) -> Any:
        dispatcher = compile_(func)
        if _HEALS and isinstance(getattr(dispatcher, "_cache", None), caching.NullCache):
            dispatcher._cache = HealingCache(dispatcher.py_func)  # as enable_caching() does
        elif hasattr(dispatcher, "enable_caching"):
            dispatcher.enable_caching()  # a numba unlike 0.60-0.68 inside: its own cache
        return dispatcher  # the function itself under NUMBA_DISABLE_JIT

    return decorate


if VersionedLocator not in _IMPL._locator_classes:
    _IMPL._locator_classes.insert(0, VersionedLocator)
if CACHE.is_dir():
    with contextlib.suppress(OSError):
        os.utime(CACHE)  # in use: the last folder that pruning would remove
else:
    prune(CACHE.parent, KEEP - 1)

jit = _cached({"nogil": True})
"""Compile a function, cached on disk (the default for nslb's kernels). It runs without
Python's global lock, so batches simulated in threads compute at once."""

inline = _cached({"inline": "always"})
"""Compile a small helper that numba inlines into each compiled caller."""
