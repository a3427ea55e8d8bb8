"""nslb's two caches heal themselves: prepared MovieLens data and compiled code. Any
failure to read an entry gives one warning line and the entry is rebuilt (never a traceback,
never a file to delete by hand); a cache write that fails (a full disk) gives one warning
line and the work goes on.

Each cache is damaged in at least 200 ways, from fixed seeds: bytes flipped at random
offsets, truncations at random lengths, damage to its headers (zip local headers, directory
and end record, npy headers, pickle headers, the seal), an empty file, random bytes, and
files that are sealed but inconsistent (a field missing or of another dtype, an npy header
claiming 2**40 values, a manifest that is not one, a pickle of the wrong thing). For each:
loading raises nothing and prints exactly one warning line naming the file, the rebuilt
result equals an undamaged one, and the cache is healed (read next time with no warning).
End to end, each cache is damaged under the real ``nslb`` command; each cache write is made
to fail with a file-size limit (RLIMIT_FSIZE; Python ignores SIGXFSZ, so writes fail with
EFBIG as on a full disk).
"""

from __future__ import annotations

import errno
import inspect
import io
import json
import os
import pickle
import shutil
import struct
import subprocess
import sys
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numba
import numpy as np
import pytest

from nslb_cli.agents import linear_kernels
from nslb_cli.compiled import jit as compiled
from nslb_cli.data import prepared_cache
from nslb_cli.data.prepare import Loaded, load_or_prepare
from nslb_cli.data.prepared_cache import check_seal, write_sealed
from tests.helpers.cli import NSLB, said
from tests.helpers.faults import file_size_limit
from tests.helpers.movielens import (
    TINY,
    TINY_RUN,
    needs_ml_100k,
    tiny_release,
    write_csv,
    write_ml1m,
)
from tests.helpers.paths import ML_100K

HERE = Path(__file__).resolve().parent
KINDS = ("flipped bytes", "truncated", "headers", "whole file")
Variant = tuple[str, bytes]  # what was done, the damaged file


# --- damage ----------------------------------------------------------------------------------


def flipped(raw: bytes, n: int, seed: int) -> list[Variant]:
    """``n`` copies of ``raw``, each with one byte at a random offset xor-ed with 1…255."""
    rng = np.random.default_rng(seed)
    found = []
    for offset, mask in zip(rng.integers(0, len(raw), n), rng.integers(1, 256, n), strict=True):
        damaged = bytearray(raw)
        damaged[offset] ^= mask
        found.append((f"byte {offset} of {len(raw)} ^ {mask:#04x}", bytes(damaged)))
    return found


def truncated(raw: bytes, n: int, seed: int) -> list[Variant]:
    """``raw`` cut at ``n`` distinct random lengths (0 … len - 1)."""
    lengths = np.random.default_rng(seed).choice(len(raw), size=min(n, len(raw)), replace=False)
    return [(f"truncated to {k} of {len(raw)} bytes", raw[:k]) for k in sorted(lengths)]


def in_regions(raw: bytes, regions: list[tuple[str, int, int]], n: int, seed: int) -> list[Variant]:
    """``n`` single-byte flips spread over the named ``regions`` (start, stop) in turn, then
    each region zeroed whole."""
    rng = np.random.default_rng(seed)
    found = []
    for i in range(n):
        name, start, stop = regions[i % len(regions)]
        offset, mask = int(rng.integers(start, stop)), int(rng.integers(1, 256))
        damaged = bytearray(raw)
        damaged[offset] ^= mask
        found.append((f"{name}: byte {offset} ^ {mask:#04x}", bytes(damaged)))
    for name, start, stop in regions:
        found.append((f"{name} zeroed", raw[:start] + bytes(stop - start) + raw[stop:]))
    return found


def whole_file(raw: bytes, seed: int, magic: bytes) -> list[Variant]:
    """Damage to the file as a whole: empty, random bytes, doubled, extended, shortened."""
    rng = np.random.default_rng(seed)
    half = len(raw) // 2
    return [
        ("empty file", b""),
        ("one random byte", rng.bytes(1)),
        ("100 random bytes", rng.bytes(100)),
        ("random bytes of the file's size", rng.bytes(len(raw))),
        (f"{magic!r} then random bytes", magic + rng.bytes(len(raw) - len(magic))),
        ("a text file", b"not a cache file\n"),
        ("the file twice", raw + raw),
        ("64 random bytes appended", raw + rng.bytes(64)),
        ("one byte short", raw[:-1]),
        ("one zero byte more", raw + b"\0"),
        ("first half zeroed", bytes(half) + raw[half:]),
        ("second half zeroed", raw[:half] + bytes(len(raw) - half)),
    ]


def zip_regions(raw: bytes) -> list[tuple[str, int, int]]:
    """Where a (sealed) ``.npz`` keeps its structure: each member's local header and npy
    header (compressed or not), the central directory, the end record and the seal."""
    regions = []
    with zipfile.ZipFile(io.BytesIO(raw)) as archive:
        for info in archive.infolist():
            start = info.header_offset
            name_size, extra_size = struct.unpack("<HH", raw[start + 26 : start + 30])
            data = start + 30 + name_size + extra_size
            regions.append((f"local header of {info.filename}", start, data))
            npy = 128 if info.compress_type == zipfile.ZIP_STORED else 16
            regions.append(
                (f"npy header of {info.filename}", data, data + min(npy, info.compress_size))
            )
    end = raw.rindex(b"PK\x05\x06")
    directory = struct.unpack("<I", raw[end + 16 : end + 20])[0]
    return [
        *regions,
        ("central directory", directory, end),
        ("end of central directory", end, end + 22),
        ("seal", end + 22, len(raw)),
    ]


def npz_variants(raw: bytes, kind: str, seed: int) -> list[Variant]:
    """Damaged copies of a sealed ``.npz`` cache file ``raw``, of one ``kind``."""
    return {
        "flipped bytes": lambda: flipped(raw, 90, seed),
        "truncated": lambda: truncated(raw, 60, seed + 1),
        "headers": lambda: in_regions(raw, zip_regions(raw), 40, seed + 2),
        "whole file": lambda: whole_file(raw, seed + 3, b"PK\x03\x04"),
    }[kind]()


def rezipped(
    raw: bytes,
    seal: Callable[[Any, memoryview], None],
    members: dict[str, bytes | None],
    compression: int = zipfile.ZIP_STORED,
) -> bytes:
    """The archive ``raw`` with ``members`` replaced (``None``: left out), sealed again."""
    archive = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(raw)) as old, zipfile.ZipFile(archive, "w", compression) as new:
        for name in old.namelist():
            data = members.get(name, old.read(name))
            if data is not None:
                new.writestr(name, data)
        for name, data in members.items():
            if name not in old.namelist() and data is not None:
                new.writestr(name, data)
    out = io.BytesIO()
    seal(out, archive.getbuffer())
    return out.getvalue()


def npy(values: Any) -> bytes:
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, np.asarray(values), allow_pickle=False)
    return buffer.getvalue()


def huge_npy(dtype: str) -> bytes:
    """An npy header claiming 2**40 values (and none of them)."""
    buffer = io.BytesIO()
    header = {"descr": dtype, "fortran_order": False, "shape": (2**40,)}
    np.lib.format.write_array_header_1_0(buffer, header)
    return buffer.getvalue()


def warning_lines(text: str) -> list[str]:
    """The lines of ``text`` (stderr) that say something (``tests.helpers.cli.said``)."""
    return said(text)


# --- 1. prepared MovieLens data --------------------------------------------------------------


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Loaded, bytes]:
    """A tiny release, its prepared data (cached) and the cache file's bytes."""
    folder = tmp_path_factory.mktemp("prepared")
    release = write_ml1m(tiny_release(), folder / "release")
    first = load_or_prepare(release, TINY, folder / "cache")
    return release, first, first.path.read_bytes()


def same_prepared(got: Any, expected: Any) -> None:
    for name in got.ARRAYS:
        np.testing.assert_array_equal(getattr(got, name), getattr(expected, name), err_msg=name)
        assert getattr(got, name).dtype == getattr(expected, name).dtype, name
    assert got.genre_names == expected.genre_names
    timing = ("build_seconds",)
    assert {k: v for k, v in got.diagnostics.items() if k not in timing} == {
        k: v for k, v in expected.diagnostics.items() if k not in timing
    }


def text_npy(text: bytes) -> bytes:
    """An npy file of ``text`` as uint8 (how the caches store JSON)."""
    return npy(np.frombuffer(text, np.uint8))


def prepared_crafted(raw: bytes, key: str) -> list[Variant]:
    """Sealed files (the seal matches) whose contents do not check out."""
    with np.load(io.BytesIO(raw)) as stored:
        users = stored["test_users"]
    other_key = npy(np.array(key[::-1]))
    changes: list[tuple[str, dict[str, bytes | None]]] = [
        ("without test_users", {"test_users.npy": None}),
        ("test_users as float32", {"test_users.npy": npy(users.astype(np.float32))}),
        ("test_users one row short", {"test_users.npy": npy(users[:-1])}),
        ("test_users claims 2**40 values", {"test_users.npy": huge_npy("<f8")}),
        ("without a manifest", {"_manifest.npy": None}),
        ("a manifest that is not JSON", {"_manifest.npy": text_npy(b"{not json")}),
        ("a manifest that is a list", {"_manifest.npy": text_npy(b"[1, 2]")}),
        ("without its key", {"_cache_key.npy": None}),
        ("another key", {"_cache_key.npy": other_key}),
    ]
    seal = write_sealed
    return [
        *((f"sealed, {name}", rezipped(raw, seal, members)) for name, members in changes),
        (
            "sealed, deflated",
            rezipped(raw, seal, {"_cache_key.npy": other_key}, zipfile.ZIP_DEFLATED),
        ),
    ]


SHARES = ["every 8th", pytest.param("the rest", marks=pytest.mark.slow)]
"""The damaged caches' cases: every 8th in make test (each kind has more than 8), the others
with make test-full."""


def share_of(cases: list[Any], share: str) -> list[Any]:
    return [case for n, case in enumerate(cases) if (n % 8 == 0) == (share == "every 8th")]


@pytest.mark.parametrize("share", SHARES)
def test_a_damaged_prepared_cache_is_rebuilt_after_one_warning(
    prepared: tuple[Path, Loaded, bytes], capsys: pytest.CaptureFixture[str], share: str
) -> None:
    release, first, pristine = prepared
    path, root = first.path, first.path.parent.parent
    cases = [
        *(case for kind in KINDS for case in npz_variants(pristine, kind, KINDS.index(kind))),
        *prepared_crafted(pristine, path.stem.removeprefix("movielens-")),
    ]
    for name, data in share_of(cases, share):
        path.write_bytes(data)
        capsys.readouterr()
        rebuilt = load_or_prepare(release, TINY, root)
        lines = warning_lines(capsys.readouterr().err)
        assert len(lines) == 1 and lines[0].startswith("nslb: warning: "), (name, lines)
        assert str(path) in lines[0], (name, lines)
        assert not rebuilt.hit and rebuilt.path == path, name
        same_prepared(rebuilt.data, first.data)
        healed = load_or_prepare(release, TINY, root)
        assert healed.hit and capsys.readouterr().err == "", f"{name}: not healed"
        same_prepared(healed.data, first.data)


def test_prepared_cache_files_are_sealed_and_written_like_any_file(
    prepared: tuple[Path, Loaded, bytes],
) -> None:
    _, first, pristine = prepared
    check_seal(pristine)
    mask = os.umask(0)
    os.umask(mask)
    assert first.path.stat().st_mode & 0o777 == 0o666 & ~mask, "umask's permissions, not 0600"
    assert not [p for p in first.path.parent.iterdir() if p.name.startswith(".")], "no temporary"


WRITE_ERRORS = [
    OSError(errno.ENOSPC, "No space left on device"),
    OSError(errno.EDQUOT, "Disk quota exceeded"),
    PermissionError(errno.EACCES, "Permission denied"),
    OSError(errno.EROFS, "Read-only file system"),
]
"""A full disk, a quota, a folder one may not write, a read-only file system."""


def test_a_prepared_cache_that_cannot_be_written_leaves_the_data_in_memory(
    prepared: tuple[Path, Loaded, bytes],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    release, first, _ = prepared
    for n, error in enumerate(WRITE_ERRORS):

        def failing(path: Path, write: Any, error: OSError = error) -> None:
            raise error

        monkeypatch.setattr(prepared_cache, "atomic_write", failing)
        capsys.readouterr()
        loaded = load_or_prepare(release, TINY, tmp_path / f"cache{n}")
        lines = warning_lines(capsys.readouterr().err)
        assert len(lines) == 1 and str(loaded.path) in lines[0], lines
        assert error.strerror in lines[0], lines
        same_prepared(loaded.data, first.data)


# --- 2. compiled code ------------------------------------------------------------------------


def kernel(x: float, y: float) -> float:
    """The test's compiled function (compiled through ``compiled.jit``, cached in tmp)."""
    return x * 2.0 + y


ARGS = (1.5, 0.25)
EXPECTED = kernel(*ARGS)


def fresh_dispatcher(cache: Path) -> Any:
    """A new dispatcher of ``kernel`` whose cache folder is in ``cache`` (nslb's
    versioned locator, pointed at this folder for the decoration only)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(compiled, "PACKAGE", HERE)
        patch.setattr(compiled, "CACHE", cache)
        return compiled.jit(kernel)


@pytest.fixture(scope="module")
def kernel_cache(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[Path, bytes]]:
    """``kernel`` compiled once into a cache folder: its index and data files, and the
    bytes of each."""
    cache = tmp_path_factory.mktemp("numba")
    dispatcher = fresh_dispatcher(cache)
    assert dispatcher(*ARGS) == EXPECTED and dispatcher.stats.cache_misses
    (index,) = cache.rglob("*.nbi")
    (data,) = cache.rglob("*.nbc")
    return index, data, {index: index.read_bytes(), data: data.read_bytes()}


def seal_numba(body: bytes) -> bytes:
    tail = compiled._SEAL
    return body + tail + b"%08x" % zlib.crc32(tail, zlib.crc32(body))


def compiled_variants(
    index: Path, data: Path, pristine: dict[Path, bytes], kind: str
) -> list[tuple[Path, str, bytes]]:
    """Damaged copies of the index and the data file, half each, of one ``kind``."""
    found: list[tuple[Path, str, bytes]] = []
    for number, path in enumerate((index, data)):
        raw = pristine[path]
        seed = 20 + 4 * KINDS.index(kind) + number if kind in KINDS else number
        if kind == "flipped bytes":
            variants = flipped(raw, 40, seed)
        elif kind == "truncated":
            variants = truncated(raw, 25, seed)
        elif kind == "headers":  # the pickle header (protocol, numba's version), the seal
            size = len(raw)
            variants = in_regions(
                raw, [("pickle header", 0, 48), ("seal", size - 19, size)], 20, seed
            )
        elif kind == "whole file":
            variants = whole_file(raw, seed, b"\x80\x05")
        else:
            body = raw[: -len(compiled._SEAL) - 8]
            version = pickle.dumps(numba.__version__) if path == index else b""
            variants = [
                ("sealed random bytes", seal_numba(np.random.default_rng(number).bytes(len(body)))),
                ("sealed, half of it", seal_numba(body[: len(body) // 2])),
                ("sealed, garbage", seal_numba(version + b"garbage")),
                ("sealed, a pickle of a number", seal_numba(version + pickle.dumps(5))),
                (
                    "sealed, a pickle of a tuple",
                    seal_numba(version + pickle.dumps((1, "two", 3.0))),
                ),
                ("sealed, empty", seal_numba(b"")),
            ]
        found += [(path, f"{path.suffix}: {name}", damaged) for name, damaged in variants]
    return found


@pytest.mark.parametrize("share", SHARES)
def test_a_damaged_compiled_cache_is_compiled_again_after_one_warning(
    kernel_cache: tuple[Path, Path, dict[Path, bytes]],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    share: str,
) -> None:
    index, data, pristine = kernel_cache
    cache = index.parent.parent
    monkeypatch.setattr(compiled, "_warned", set())
    kinds = [*KINDS, "sealed but inconsistent"]
    cases = [case for kind in kinds for case in compiled_variants(index, data, pristine, kind)]
    for path, name, damaged in share_of(cases, share):
        for good, raw in pristine.items():
            good.write_bytes(raw)
        path.write_bytes(damaged)
        compiled._warned.clear()
        capsys.readouterr()
        dispatcher = fresh_dispatcher(cache)
        assert capsys.readouterr().err == "", "nothing is read before the first call"
        assert dispatcher(*ARGS) == EXPECTED, name
        lines = warning_lines(capsys.readouterr().err)
        assert len(lines) == 1, (name, lines)
        assert lines[0].startswith("nslb: warning: damaged compiled-code cache "), (name, lines)
        assert f"{path}" in lines[0] and lines[0].endswith(": compiling again"), (name, lines)
        assert dispatcher.stats.cache_misses and not dispatcher.stats.cache_hits, name
        healed = fresh_dispatcher(cache)
        assert healed(*ARGS) == EXPECTED and healed.stats.cache_hits, f"{name}: not healed"
        assert capsys.readouterr().err == "", name


def test_each_cache_is_damaged_in_at_least_200_ways(
    prepared: tuple[Path, Loaded, bytes],
    kernel_cache: tuple[Path, Path, dict[Path, bytes]],
) -> None:
    _, first, raw = prepared
    counts = {
        "prepared": sum(len(npz_variants(raw, kind, KINDS.index(kind))) for kind in KINDS)
        + len(prepared_crafted(raw, "k")),
        "compiled": sum(len(compiled_variants(*kernel_cache, kind)) for kind in [*KINDS, "sealed"]),
    }
    assert min(counts.values()) >= 200, counts


def test_every_nslb_kernel_uses_the_healing_cache() -> None:
    from nslb_cli.agents import changepoint, linalg
    from nslb_cli.agents.umts import sampling

    for dispatcher in (linalg.dot, sampling.draw_each, changepoint.block_sum):  # jit, inline
        assert type(dispatcher._cache) is compiled.HealingCache, dispatcher
        assert Path(dispatcher._cache.cache_path).parent == compiled.CACHE


def test_a_compiled_cache_that_cannot_be_written_keeps_the_code_in_memory(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A full disk or a quota: one warning line, however often the code is compiled."""
    for error in WRITE_ERRORS[:2]:

        def failing(self: Any, name: str, data: Any, error: OSError = error) -> None:
            raise error

        cache = tmp_path / errno.errorcode[error.errno]
        monkeypatch.setattr(compiled, "_warned", set())
        monkeypatch.setattr(compiled.SealedCacheFile, "_save_data", failing)
        capsys.readouterr()
        for _ in range(2):
            dispatcher = fresh_dispatcher(cache)
            assert dispatcher(*ARGS) == EXPECTED
        lines = warning_lines(capsys.readouterr().err)
        assert len(lines) == 1 and error.strerror in lines[0], lines
        assert "cannot save compiled code in the cache folder" in lines[0]
        assert str(cache) in lines[0] and "output" not in lines[0]


# --- end to end: the nslb command, damaged caches, full disks --------------------------------


def command(
    args: list[str],
    cwd: Path,
    env: dict[str, str] | None = None,
    file_size: int | None = None,
) -> subprocess.CompletedProcess[str]:
    """``args`` run in ``cwd`` (made if missing), with files limited to ``file_size`` bytes
    (RLIMIT_FSIZE: a write past it fails with EFBIG, as on a full disk)."""
    cwd.mkdir(parents=True, exist_ok=True)
    return subprocess.run(
        args,
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        preexec_fn=None if file_size is None else file_size_limit(file_size),
    )


def own_cache(folder: Path) -> dict[str, str]:
    """The environment of a process whose nslb cache (compiled code included) is ``folder``."""
    env = {**os.environ, "NSLB_CACHE": str(folder)}
    env.pop("NUMBA_CACHE_DIR", None)
    return env


def one_line(done: subprocess.CompletedProcess[str], start: str) -> str:
    """The one line on stderr of a successful command, which starts with ``start``."""
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    lines = warning_lines(done.stderr)
    assert len(lines) == 1 and lines[0].startswith(start), done.stderr
    return lines[0]


def seed_files(cwd: Path) -> dict[str, bytes]:
    """Every seed CSV under ``cwd/outputs``, by its path below it."""
    outputs = cwd / "outputs"
    return {str(p.relative_to(outputs)): p.read_bytes() for p in outputs.rglob("seed=*.csv")}


def test_nslb_run_rebuilds_a_damaged_prepared_cache(tmp_path: Path) -> None:
    """A flipped byte inside a compressed array (a zlib.error before the seal): one warning,
    the data prepared again, the results of an undamaged run."""
    release = write_csv(tiny_release(), tmp_path / "release")
    cache = tmp_path / "cache"
    args = [NSLB, "run", "env=movielens", "agent=mts", f"env.data_dir={release}"]
    args += [f"env.cache_dir={cache}", *TINY_RUN]
    good = command(args, tmp_path / "good")
    assert good.returncode == 0 and warning_lines(good.stderr) == [], good.stderr
    (path,) = (cache / "prepared").glob("*.npz")
    pristine = path.read_bytes()
    start, stop = next(
        r[1:] for r in zip_regions(pristine) if r[0] == "npy header of test_users.npy"
    )
    damaged = bytearray(pristine)
    damaged[stop + 40] ^= 0xFF  # inside the deflate stream of test_users
    path.write_bytes(damaged)
    line = one_line(
        command(args, tmp_path / "damaged"), "nslb: warning: damaged prepared-data cache "
    )
    assert str(path) in line and line.endswith("): preparing the data again")
    assert seed_files(tmp_path / "damaged") == seed_files(tmp_path / "good") != {}
    check_seal(path.read_bytes())
    with np.load(path) as rebuilt, np.load(io.BytesIO(pristine)) as before:
        for name in ("test_users", "train_items", "prior_covariances", "genres"):
            np.testing.assert_array_equal(rebuilt[name], before[name])


def own_subfolder(kernel: Any) -> Path:
    """The folder of a compiled function's files in the versioned cache: numba names it
    after the path of the source's folder, so each checkout of nslb has its own."""
    locator = compiled.VersionedLocator.from_function(
        kernel.py_func, inspect.getfile(kernel.py_func)
    )
    return Path(locator.get_cache_path()).relative_to(compiled.CACHE)


def test_nslb_run_compiles_again_past_a_damaged_compiled_cache(tmp_path: Path) -> None:
    """An index of random bytes and a truncated data file (an UnpicklingError and an EOFError
    on every run before): one warning, both compiled again, the results of an undamaged run.

    The process's cache starts as a copy of this checkout's compiled code, when there is one
    (same sources, same folder name), so that only the damaged functions are compiled."""
    env = own_cache(tmp_path / "nslb-cache")
    versioned = tmp_path / "nslb-cache" / "numba" / compiled.CACHE.name
    if compiled.CACHE.is_dir():
        shutil.copytree(compiled.CACHE, versioned, ignore=shutil.ignore_patterns("*.tmp*"))
    args = [NSLB, "run", "agent=cd_linucb", "env.horizon=60", "run.n_seeds=2", "run.progress=false"]
    good = command(args, tmp_path / "good", env)
    assert good.returncode == 0 and warning_lines(good.stderr) == [], good.stderr
    here = versioned / own_subfolder(linear_kernels.ucb_arms)  # other checkouts' beside it
    (index,) = here.glob("linear_kernels.ucb_arms-*.nbi")
    (data,) = here.glob("linear_kernels.sherman_morrison-*.1.nbc")
    index.write_bytes(np.random.default_rng(0).bytes(len(index.read_bytes())))
    data.write_bytes(data.read_bytes()[: len(data.read_bytes()) // 2])
    line = one_line(command(args, tmp_path / "damaged", env), "nslb: warning: damaged compiled")
    assert line.endswith(": compiling again") and str(versioned) in line
    assert seed_files(tmp_path / "damaged") == seed_files(tmp_path / "good") != {}
    for healed in (index, data):
        compiled._unsealed(healed.read_bytes(), str(healed))  # rewritten whole


def test_a_full_disk_leaves_the_prepared_data_uncached(tmp_path: Path) -> None:
    release = write_csv(tiny_release(), tmp_path / "release")
    cache = tmp_path / "cache"
    args = [NSLB, "data", "prepare", f"env.data_dir={release}", f"env.cache_dir={cache}"]
    args += [
        a for a in TINY_RUN if a.startswith("env.") and "n_arms" not in a and "horizon" not in a
    ]
    done = command(args, tmp_path, file_size=2048)
    line = one_line(done, "nslb: warning: cannot write the prepared-data cache ")
    assert str(cache / "prepared") in line and "File too large" in line, line
    assert "train/test agreement" in done.stdout, "prepared all the same"
    assert list((cache / "prepared").iterdir()) == [], "no file, no temporary left"


def test_a_full_disk_keeps_the_compiled_code_in_memory(tmp_path: Path) -> None:
    """Data files larger than the limit: one warning naming the cache folder, right results;
    the next process (no limit) compiles again, silently, and saves."""
    program = (
        "import numpy as np\nfrom nslb_cli.agents.linalg import add_scaled, dot\n"
        "x = np.arange(4.0)\nadd_scaled(x, np.ones(4), 2.0)\nprint(dot(x, np.ones(4)))\n"
    )
    env = own_cache(tmp_path / "nslb-cache")
    full = command([sys.executable, "-c", program], tmp_path, env, file_size=4096)
    line = one_line(full, "nslb: warning: cannot save compiled code in the cache folder ")
    assert str(tmp_path / "nslb-cache") in line and "File too large" in line
    assert "output" not in line and full.stdout.strip() == "14.0"
    again = command([sys.executable, "-c", program], tmp_path, env)
    assert again.returncode == 0 and warning_lines(again.stderr) == []
    assert again.stdout.strip() == "14.0"
    assert len(list((tmp_path / "nslb-cache").rglob("*.nbc"))) == 2, "saved this time"


# --- slow: the real MovieLens data, umTS's kernels, a full disk under nslb run ---------------

ML_SMALL = [f"env.data_dir={ML_100K}", "env.min_user_ratings=100", "env.min_item_ratings=100"]


@pytest.mark.slow
@needs_ml_100k
def test_ml100k_prepared_cache_damaged_under_nslb_data_prepare_and_run(tmp_path: Path) -> None:
    cache = f"env.cache_dir={tmp_path / 'cache'}"
    prepare = [NSLB, "data", "prepare", "--json", *ML_SMALL, cache]
    run = [NSLB, "run", "env=movielens", "agent=mts", *ML_SMALL, cache, "env.horizon=200"]
    run += ["run.n_seeds=2", "run.progress=false"]
    built = command(prepare, tmp_path)
    assert built.returncode == 0 and warning_lines(built.stderr) == [], built.stderr
    good = command(run, tmp_path / "good")
    assert good.returncode == 0 and warning_lines(good.stderr) == [], good.stderr
    (path,) = (tmp_path / "cache" / "prepared").glob("*.npz")
    pristine = path.read_bytes()
    for name, damaged in [
        ("truncated", pristine[: len(pristine) // 3]),
        ("flipped", flipped(pristine, 1, seed=5)[0][1]),
        ("garbage", np.random.default_rng(6).bytes(len(pristine))),
    ]:
        path.write_bytes(damaged)
        again = command(prepare, tmp_path)
        assert str(path) in one_line(again, "nslb: warning: damaged prepared-data cache "), name
        report, before = json.loads(again.stdout), json.loads(built.stdout)
        assert not report["cache"]["hit"], name
        for key in ("clusters", "filtered", "penalty", "split", "genres"):
            assert report[key] == before[key], (name, key)
    path.write_bytes(flipped(pristine, 1, seed=7)[0][1])
    line = one_line(
        command(run, tmp_path / "damaged"), "nslb: warning: damaged prepared-data cache "
    )
    assert str(path) in line
    assert seed_files(tmp_path / "damaged") == seed_files(tmp_path / "good") != {}


@pytest.mark.slow
def test_umts_run_compiles_again_past_a_damaged_compiled_cache(tmp_path: Path) -> None:
    """The case that gave a traceback on every umTS run: a garbage ``.nbi`` and a truncated
    ``.nbc``, in a cache of its own (compiled from nothing: ~15 s)."""
    env = own_cache(tmp_path / "nslb-cache")
    args = [NSLB, "run", "agent=umts", "env.horizon=60", "run.n_seeds=2", "run.progress=false"]
    good = command(args, tmp_path / "good", env)
    assert good.returncode == 0 and warning_lines(good.stderr) == [], good.stderr
    versioned = tmp_path / "nslb-cache" / "numba" / compiled.CACHE.name
    (index,) = versioned.rglob("step.step-*.nbi")
    (data,) = versioned.rglob("latent.resample-*.1.nbc")
    index.write_bytes(b"garbage" * 100)
    data.write_bytes(data.read_bytes()[:1000])
    line = one_line(command(args, tmp_path / "damaged", env), "nslb: warning: damaged compiled")
    assert line.endswith(": compiling again")
    assert seed_files(tmp_path / "damaged") == seed_files(tmp_path / "good") != {}
    healed = command(args + ["run.overwrite=true"], tmp_path / "healed", env)
    assert healed.returncode == 0 and warning_lines(healed.stderr) == [], healed.stderr


@pytest.mark.slow
def test_a_full_disk_under_nslb_run_keeps_the_compiled_code_in_memory(tmp_path: Path) -> None:
    """cd_linucb compiled from nothing with files limited to 64 KiB: its results (7 KiB) are
    written, the larger compiled-code files are not; one warning line that names the cache
    folder, not the results folder."""
    env = own_cache(tmp_path / "nslb-cache")
    args = [NSLB, "run", "agent=cd_linucb", "env.horizon=60", "run.n_seeds=2", "run.progress=false"]
    full = command(args, tmp_path / "full", env, file_size=65536)
    line = one_line(full, "nslb: warning: cannot save compiled code in the cache folder ")
    assert str(tmp_path / "nslb-cache") in line and "File too large" in line
    good = command(args, tmp_path / "good", own_cache(tmp_path / "other-cache"))
    assert good.returncode == 0, good.stderr
    assert seed_files(tmp_path / "full") == seed_files(tmp_path / "good") != {}
