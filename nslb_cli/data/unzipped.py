"""The unzipped files of a downloaded release: kept equal to the archive they came from.

pooch checks the archive's pinned MD5 on every use, but unzips it only once; a file of the
unzipped folder that was edited, cut short or lost afterwards would be read as the release.
So each member is compared with the archive's own record of it (size and CRC-32), and one
that differs is unzipped again, with one warning line. A full comparison reads every file;
it is done when the files' sizes or modification times differ from those recorded after the
last one (``<release>.unzipped.json`` beside the archive), i.e. after any write to them.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import zipfile
import zlib
from pathlib import Path

from nslb_cli.data import DataError
from nslb_cli.data.prepared_cache import warn
from nslb_cli.store.atomic import atomic_write, atomic_write_text

CHUNK = 1 << 20


def check(archive: Path, extracted: Path) -> None:
    """Make every file of ``extracted`` (the unzipped ``archive``) the archive's member."""
    record = archive.with_suffix(".unzipped.json")
    try:
        zipped = zipfile.ZipFile(archive)
    except (OSError, zipfile.BadZipFile) as err:  # checked by its MD5 a moment ago
        raise DataError("env.release", f"cannot read {archive} ({err}): remove it") from None
    with zipped:
        members = [m for m in zipped.infolist() if not m.is_dir()]
        if _read(record) == _stamps(extracted, members):
            return
        changed = [m for m in members if not _intact(extracted / m.filename, m)]
        if changed:
            warn(
                f"{extracted / changed[0].filename}"
                + (f" and {len(changed) - 1} more files differ" if len(changed) > 1 else " differs")
                + f" from the verified archive {archive}: unzipped again"
            )
        try:
            for member in changed:
                path = extracted / member.filename
                path.parent.mkdir(parents=True, exist_ok=True)
                with zipped.open(member) as source:
                    atomic_write(path, lambda f: shutil.copyfileobj(source, f))
        except OSError as err:
            raise DataError(
                "env.release",
                f"cannot unzip {archive} again into {extracted} ({err.strerror or err}): "
                "remove that folder, or set env.data_dir=<a copy of the release>",
            ) from None
    with contextlib.suppress(OSError):  # without the record, the next use compares again
        atomic_write_text(record, json.dumps(_stamps(extracted, members)) + "\n")


def _intact(path: Path, member: zipfile.ZipInfo) -> bool:
    """Whether ``path`` holds the bytes of ``member`` (its size and CRC-32)."""
    try:
        if path.stat().st_size != member.file_size:
            return False
        crc = 0
        with path.open("rb") as handle:
            while chunk := handle.read(CHUNK):
                crc = zlib.crc32(chunk, crc)
    except OSError:
        return False
    return crc == member.CRC


def _stamps(extracted: Path, members: list[zipfile.ZipInfo]) -> dict[str, list[int]] | None:
    """Size and modification time of each member's file; ``None`` if one is missing."""
    stamps = {}
    for member in members:
        try:
            status = (extracted / member.filename).stat()
        except OSError:
            return None
        stamps[member.filename] = [status.st_size, status.st_mtime_ns]
    return stamps


def _read(record: Path) -> object:
    try:
        return json.loads(record.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
