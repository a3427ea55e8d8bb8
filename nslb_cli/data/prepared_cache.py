"""A folder of ``.npz`` files keyed by a hash of everything that determines their contents.

The cache heals itself; no file of it ever has to be deleted by hand:

* Writes go through ``nslb_cli.store.atomic.atomic_write`` (a temporary file in the same
  folder, fsynced, given the umask's permissions, then renamed), so a file under its final
  name is always complete. A write that fails (a full disk, a quota, a read-only cache
  folder) says so in one warning line and the caller goes on with the data in memory.
* Every file is *sealed*: its zip comment is ``nslb-crc32:`` and the CRC-32 of every byte
  before it (``write_sealed``, checked by ``check_seal`` before numpy reads a byte
  of the archive), and a manifest inside it records each array's dtype and shape. Any
  file that cannot be read back whole and consistent — truncated, a flipped byte
  anywhere, a damaged header, empty, random bytes, a field missing or of another dtype or
  shape — counts as absent: one warning line names it and the cause, and the caller
  rebuilds and overwrites it.
"""

from __future__ import annotations

import hashlib
import io
import json
import struct
import sys
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from nslb_cli.store.atomic import atomic_write

KEY_FIELD = "_cache_key"
MANIFEST_FIELD = "_manifest"  # {name: [dtype.str, shape]} of every array stored
AGAIN = "preparing the data again"
UNCACHED = "it is prepared again next time"
SEAL = b"nslb-crc32:"  # the zip comment: this, then the CRC-32 (8 hex digits) of all before
SEAL_SIZE = len(SEAL) + 8
_END = b"PK\x05\x06"  # zip's end of central directory record (22 bytes, then the comment)
_END_SIZE = 22


class DamagedCache(ValueError):
    """A cache file that cannot be used as it is."""


def write_sealed(handle: BinaryIO, archive: memoryview) -> None:
    """Write the zip ``archive`` (which has no comment) with its seal as the comment."""
    if len(archive) < _END_SIZE or archive[-_END_SIZE : -_END_SIZE + 4] != _END:
        raise ValueError("not a zip archive without a comment")
    body, tail = archive[:-2], struct.pack("<H", SEAL_SIZE) + SEAL
    handle.write(body)
    handle.write(tail)
    handle.write(b"%08x" % zlib.crc32(tail, zlib.crc32(body)))


def check_seal(raw: bytes) -> None:
    """Raise ``DamagedCache`` unless ``raw`` carries its seal, and the seal matches."""
    if len(raw) < _END_SIZE + SEAL_SIZE or raw[-SEAL_SIZE:-8] != SEAL:
        raise DamagedCache("truncated or not an nslb cache file" if raw else "empty file")
    try:
        stored = int(raw[-8:], 16)
    except ValueError:
        stored = -1
    if stored != zlib.crc32(memoryview(raw)[:-8]):
        raise DamagedCache("checksum mismatch")


def cause(err: BaseException) -> str:
    """One line saying what ``err`` was (its type when it says nothing more)."""
    text = (err.strerror if isinstance(err, OSError) else None) or str(err)
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line[:200] or type(err).__name__


def digest(settings: dict[str, Any]) -> str:
    """A short stable hash of a JSON-serialisable mapping."""
    text = json.dumps(settings, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def file_digest(path: Path, chunk: int = 1 << 22) -> str:
    """SHA-256 of the contents of ``path`` (as ``sha256sum`` prints it)."""
    hasher = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(chunk):
            hasher.update(block)
    return hasher.hexdigest()


def warn(message: str) -> None:
    """One warning line on stderr."""
    print(f"nslb: warning: {message}", file=sys.stderr)


def load(path: Path, key: str, fields: Iterable[str]) -> dict[str, np.ndarray] | None:
    """The arrays stored at ``path`` under ``key``, or ``None`` if absent or unusable (one
    warning line for a file that exists but cannot be used)."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except Exception as err:
        warn(f"cannot read the prepared-data cache {path} ({cause(err)}): {AGAIN}")
        return None
    try:
        check_seal(raw)
        with np.load(io.BytesIO(raw), allow_pickle=False) as stored:
            if str(stored[KEY_FIELD]) != key:
                warn(f"the prepared-data cache {path} was written for other settings: {AGAIN}")
                return None
            arrays = {name: stored[name] for name in fields}
            manifest = json.loads(stored[MANIFEST_FIELD].tobytes())
        _check(arrays, manifest)
    except Exception as err:  # anything at all: the file is rebuilt, never trusted
        warn(f"damaged prepared-data cache {path} ({cause(err)}): {AGAIN}")
        return None
    return arrays


def _check(arrays: dict[str, np.ndarray], manifest: Any) -> None:
    """Every array as the manifest written with it says (dtype and shape)."""
    if not isinstance(manifest, dict):
        raise DamagedCache("no manifest")
    for name, values in arrays.items():
        expected = manifest.get(name)
        if expected != [values.dtype.str, list(values.shape)]:
            raise DamagedCache(f"field {name} is {values.dtype.str} {values.shape}, not {expected}")


def save(path: Path, key: str, arrays: dict[str, Any]) -> bool:
    """Store ``arrays`` at ``path`` under ``key``, atomically and sealed; ``False`` (after one
    warning line) when the file cannot be written: the caller goes on without the cache."""
    stored: dict[str, Any] = {name: np.asarray(values) for name, values in arrays.items()}
    manifest = {name: [values.dtype.str, list(values.shape)] for name, values in stored.items()}
    stored[KEY_FIELD] = np.array(key)
    stored[MANIFEST_FIELD] = np.frombuffer(json.dumps(manifest).encode(), dtype=np.uint8)
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **stored)
    try:
        atomic_write(path, lambda handle: write_sealed(handle, buffer.getbuffer()))
    except OSError as err:
        warn(f"cannot write the prepared-data cache {path} ({cause(err)}): {UNCACHED}")
        return False
    return True
