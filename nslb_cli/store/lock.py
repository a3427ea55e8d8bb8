"""One writer per run folder.

Every process that writes a run folder holds its lock (``.nslb.lock``, an ``flock`` taken
through :mod:`filelock`: the operating system releases it when the process ends, however it
ends) and leaves a note of who it is beside it (``.nslb-writer.json``: pid, host, result key
and command). A second process that finds the folder locked reads the note:

* another result key (another config, or other data): refused at once, in one line that
  names the folder and the process writing it;
* the same key: it waits for the first to finish, then finds its seeds done (a seed is
  never written twice, and the seeds of two configs never mix).
"""

from __future__ import annotations

import json
import logging
import os
import socket
import time
from pathlib import Path
from types import TracebackType
from typing import Any

from filelock import FileLock, Timeout

from nslb_cli.store.atomic import atomic_write_text
from nslb_cli.store.folder import OutputConflict

LOCK_FILE = ".nslb.lock"
WRITER_FILE = ".nslb-writer.json"
NOTE_WAIT = 5.0  # seconds to wait for a holder's note before calling it unknown
POLL = 0.2  # seconds between attempts while waiting

log = logging.getLogger("nslb")


class FolderLock:
    """The writing lock of ``folder`` for results of ``key`` (a context manager).

    Args:
        folder: the run folder (created if missing).
        key: the result key of what this process writes
            (:func:`nslb_cli.store.folder.result_key`).
        command: how this process was started, for the note.
    """

    def __init__(self, folder: Path, key: str, command: str) -> None:
        self.folder = folder
        self.key = key
        self.note = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "key": key,
            "command": command,
        }
        self._lock = FileLock(str(folder / LOCK_FILE))

    def __enter__(self) -> FolderLock:
        self.folder.mkdir(parents=True, exist_ok=True)
        try:
            self._lock.acquire(timeout=0)
        except Timeout:
            self._wait_for_holder()
        atomic_write_text(self.folder / WRITER_FILE, json.dumps(self.note) + "\n")
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        (self.folder / WRITER_FILE).unlink(missing_ok=True)
        self._lock.release()

    def _wait_for_holder(self) -> None:
        """The folder is locked: refuse if its writer writes another key, else wait."""
        holder = self._holder()
        if holder is None or holder.get("key") != self.key:
            who = _describe(holder)
            raise OutputConflict(
                f"{self.folder} is being written by {who} with another config; wait for it "
                "to finish, or pass hydra.run.dir=… (or hydra.sweep.dir=…) to write elsewhere"
            )
        log.info("%s: waiting for %s, which writes the same config", self.folder, _describe(holder))
        self._lock.acquire(poll_interval=POLL)

    def _holder(self) -> dict[str, Any] | None:
        """The note of the process holding the lock (``None`` if it leaves none in time)."""
        deadline = time.monotonic() + NOTE_WAIT
        while True:
            try:
                note = json.loads((self.folder / WRITER_FILE).read_text(encoding="utf-8"))
                if isinstance(note, dict):
                    return note
            except (OSError, UnicodeDecodeError, ValueError):
                pass
            if time.monotonic() > deadline:
                return None
            try:  # the holder may have finished meanwhile
                self._lock.acquire(timeout=POLL)
            except Timeout:
                continue
            self._lock.release()
            return {"key": self.key}  # free now: wait (that is, take it) below


def _describe(note: dict[str, Any] | None) -> str:
    if note is None or "pid" not in note:
        return "another nslb process"
    command = f" ({note['command']})" if note.get("command") else ""
    return f"process {note['pid']} on {note.get('host', '?')}{command}"
