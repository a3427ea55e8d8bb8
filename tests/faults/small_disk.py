"""``python -m tests.faults.small_disk ROOM ARG…``: ``nslb ARG…`` on a disk with ROOM bytes
left, without the privileges a small tmpfs needs to be mounted.

Every file nslb writes goes through ``nslb_cli.store.atomic.atomic_write``, which fills its
temporary through ``os.fdopen(fd, "wb")``. Here that handle's writes share ROOM bytes, as the
kernel's ``write(2)`` shares a full disk's last blocks: a write gets the bytes that still fit
(a short write, which the buffered file retries), and one that finds no room left fails with
``ENOSPC``, "No space left on device", no file name attached. Space freed by removed files is
not given back; the commands under test never need it.
"""

from __future__ import annotations

import errno
import io
import os
import sys
import threading
from collections.abc import Callable
from typing import Any


class Disk:
    """The bytes left to every file the process writes (runs write in several threads)."""

    def __init__(self, room: int) -> None:
        self.room = room
        self._lock = threading.Lock()

    def take(self, wanted: int) -> int:
        """Reserve up to ``wanted`` bytes; return how many fit."""
        with self._lock:
            granted = min(wanted, self.room)
            self.room -= granted
            return granted


def on(disk: Disk) -> Callable[..., Any]:
    """An ``os.fdopen`` whose binary write handles write to ``disk`` (other modes as usual)."""
    real = os.fdopen

    class OnDisk(io.FileIO):
        def write(self, data: Any) -> int:
            view = memoryview(data).cast("B")
            granted = disk.take(view.nbytes)
            if view.nbytes and not granted:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            return super().write(view[:granted])

    def fdopen(fd: int, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        if mode != "wb" or args or kwargs:
            return real(fd, mode, *args, **kwargs)
        return io.BufferedWriter(OnDisk(fd, "w"))

    return fdopen


def main() -> None:
    """Run ``nslb`` with the arguments after ROOM, its files written to a disk of ROOM bytes."""
    room, *arguments = sys.argv[1:]
    os.fdopen = on(Disk(int(room)))
    sys.argv = ["nslb", *arguments]
    from nslb_cli.cli import main as nslb

    nslb()


if __name__ == "__main__":
    main()
