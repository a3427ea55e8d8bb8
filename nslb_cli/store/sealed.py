"""Zip archives (``.npz`` caches) sealed with a checksum, so damage is found before parsing.

A sealed archive's zip comment is ``nslb-crc32:`` and the CRC-32 of everything before it:
:func:`write_sealed` adds it, :func:`check_seal` checks it before numpy reads a byte of the
archive. Anything else — no seal, truncated, empty, garbage, a seal that does not match — is
:class:`DamagedCache`.
"""

from __future__ import annotations

import struct
import zlib
from typing import BinaryIO

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
    """Raise :class:`DamagedCache` unless ``raw`` carries its seal, and the seal matches."""
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
