"""Files written whole or not at all, and the temporaries a killed writer leaves behind.

A file is written to a temporary name in its own folder (``.<name>.<pid>.<random>.tmp``,
created only if new, and removed again if anything interrupts the write, a signal between
the file's creation and the first line that knows it included), flushed and fsynced, then
renamed over its final name: a reader sees the old file or the
new one, never half of one, and two writers of one file each leave it whole (the last
rename wins). A process killed before the rename leaves its temporary, which
:func:`remove_stale_temporaries` deletes once its writer is gone; a
write that fails (a full disk, say) removes its temporary and raises.

Files get the permissions the user's umask allows (``0666 & ~umask``: 0644 under umask 022),
as files written by ``open`` would: a temporary file alone would be private (0600).
"""

from __future__ import annotations

import os
import re
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

TMP = ".tmp"
TEMPORARY = re.compile(r"^\.(.+)\.(\d+)\.[^.]+\.tmp$")  # .<name>.<pid>.<random>.tmp


def _file_mode() -> int:
    """``0666`` less the process's umask (read without changing it for good)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


FILE_MODE = _file_mode()  # read once, at import: os.umask is process-wide


def atomic_write(path: Path, write: Callable[[BinaryIO], object]) -> None:
    """Write ``path`` whole or not at all: ``write(handle)`` fills a temporary file in the same
    folder, which is fsynced, given the umask's permissions and renamed into place.

    The rename itself becomes durable when the folder is fsynced (:func:`fsync_folder`);
    until then a crash may lose the file, never leave half of it.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.{os.getpid()}.{secrets.token_hex(6)}{TMP}"
    created = False
    try:  # the name is chosen before the file exists: a signal at any moment leaves none
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        created = True
        with os.fdopen(fd, "wb") as handle:
            write(handle)
            handle.flush()
            os.fchmod(handle.fileno(), FILE_MODE)
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException as error:
        if created or not isinstance(error, FileExistsError):  # a name taken is not ours
            tmp.unlink(missing_ok=True)
        raise


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """:func:`atomic_write` of ``data``."""
    atomic_write(path, lambda handle: handle.write(data))


def atomic_write_text(path: Path, text: str) -> None:
    """:func:`atomic_write_bytes` of ``text`` in UTF-8 (newlines written as given)."""
    atomic_write_bytes(path, text.encode())


def fsync_folder(folder: Path) -> None:
    """Make the renames into ``folder`` durable (POSIX: fsync the directory itself)."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def temporary(name: str) -> tuple[str, int] | None:
    """The file that the temporary named ``name`` was to become, and its writer's pid;
    ``None`` if ``name`` is no temporary of nslb's (``.my-notes.tmp``)."""
    match = TEMPORARY.match(name)
    return (match.group(1), int(match.group(2))) if match else None


def remove_stale_temporaries(
    folder: Path, held: Callable[[str], bool] = lambda name: False
) -> list[Path]:
    """Remove the temporary files of :func:`atomic_write` in ``folder`` whose writer is gone:
    its pid names no process, or the file it writes is one that ``held`` says only a holder
    of the folder's lock writes (:mod:`nslb_cli.store.lock`), and this process holds it.
    Then every other writer of that file is gone, whatever its pid names now (a pid reused
    by another process, a pid of another host sharing the folder). Hidden ``.tmp`` files
    that nslb does not name so (:func:`temporary`) are left alone."""
    if not folder.is_dir():
        return []
    removed = []
    for path in folder.glob(f".*{TMP}"):
        found = temporary(path.name)
        if found is None or found[1] == os.getpid():
            continue
        target, pid = found
        if not held(target) and process_alive(pid):
            continue  # a live writer's
        path.unlink(missing_ok=True)
        removed.append(path)
    return removed


def process_alive(pid: int | str) -> bool:
    """Whether process ``pid`` (a number or its text; text that is no number: ``False``) runs
    on this machine; ``True`` where it runs as another user, who may not signal it."""
    try:
        if int(pid) == os.getpid():
            return True
        os.kill(int(pid), 0)
    except (ValueError, ProcessLookupError):
        return False
    except PermissionError:
        return True
    return True
