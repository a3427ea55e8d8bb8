"""Files written whole or not at all (docs/design.md §6, *Atomic writes*), with the umask's
permissions (``0666 & ~umask``, as ``open`` gives), and the temporaries killed writers left."""

from __future__ import annotations

import os
import re
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

TMP = ".tmp"
TEMPORARY = re.compile(r"^\.(.+)\.(\d+)\.[^.]+\.tmp$")  # .<name>.<pid>.<random>.tmp


_UMASK = os.umask(0o022)  # read once, at import (os.umask is process-wide), and set back
os.umask(_UMASK)
FILE_MODE = 0o666 & ~_UMASK


def atomic_write(path: Path, write: Callable[[BinaryIO], object]) -> None:
    """Write ``path`` whole or not at all, ``write(handle)`` filling its temporary; the
    rename is durable once the folder is fsynced (``fsync_folder``)."""
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
    """``atomic_write`` of ``data``."""
    atomic_write(path, lambda handle: handle.write(data))


def atomic_write_text(path: Path, text: str) -> None:
    """``atomic_write_bytes`` of ``text`` in UTF-8 (newlines written as given)."""
    atomic_write_bytes(path, text.encode())


def fsync_folder(folder: Path) -> None:
    """Make the renames into ``folder`` durable."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def temporary(name: str) -> tuple[str, int] | None:
    """The file the temporary ``name`` was to become and its writer's pid (``None``: not ours)."""
    match = TEMPORARY.match(name)
    return (match.group(1), int(match.group(2))) if match else None


def remove_stale_temporaries(
    folder: Path, held: Callable[[str], bool] = lambda name: False
) -> list[Path]:
    """Remove the temporaries in ``folder`` whose writer is gone: its pid names no process, or it
    writes a file that ``held`` says only this process, the lock's holder, writes."""
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
    """Whether process ``pid`` (a number or its text) runs on this machine (of any user)."""
    try:
        if int(pid) == os.getpid():
            return True
        os.kill(int(pid), 0)
    except (ValueError, ProcessLookupError):
        return False
    except PermissionError:
        return True
    return True
