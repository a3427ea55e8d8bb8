"""One writer per run folder (docs/design.md §6): an ``flock`` on ``.nslb.lock``, taken
through ``filelock``, and a note of its holder beside it (``.nslb-writer.json``)."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from nslb_cli.store.atomic import atomic_write_text
from nslb_cli.store.folder import OutputConflict
from nslb_cli.store.results import read_json

LOCK_FILE = ".nslb.lock"
WRITER_FILE = ".nslb-writer.json"
NOTE_WAIT = 5.0  # seconds to wait for a holder's note before calling it unknown
POLL = 0.2  # seconds between attempts while waiting

log = logging.getLogger("nslb")


@contextlib.contextmanager
def folder_lock(folder: Path, key: str, command: str) -> Iterator[None]:
    """Hold the writing lock of ``folder`` for results of ``key``, noting ``command`` as this
    process's: a holder of another key is refused at once, one of the same key waited for."""
    folder.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(folder / LOCK_FILE))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        holder = _holder(folder, lock, key)
        if holder is None or holder.get("key") != key:
            raise OutputConflict(
                f"{folder} is being written by {_describe(holder)} with another config; wait "
                "for it to finish, or pass hydra.run.dir=… (or hydra.sweep.dir=…) to write "
                "elsewhere"
            ) from None
        log.info("%s: waiting for %s, which writes the same config", folder, _describe(holder))
        lock.acquire(poll_interval=POLL)
    note = {"pid": os.getpid(), "host": socket.gethostname(), "key": key, "command": command}
    atomic_write_text(folder / WRITER_FILE, json.dumps(note) + "\n")
    try:
        yield
    finally:
        (folder / WRITER_FILE).unlink(missing_ok=True)
        lock.release()


def _holder(folder: Path, lock: FileLock, key: str) -> dict[str, Any] | None:
    """The note of the process holding the lock (``None`` if it leaves none in time)."""
    deadline = time.monotonic() + NOTE_WAIT
    while True:
        note = read_json(folder / WRITER_FILE)
        if isinstance(note, dict):
            return note
        if time.monotonic() > deadline:
            return None
        try:  # the holder may have finished meanwhile
            lock.acquire(timeout=POLL)
        except Timeout:
            continue
        lock.release()
        return {"key": key}  # free now: wait (that is, take it) in folder_lock


def _describe(note: dict[str, Any] | None) -> str:
    if note is None or "pid" not in note:
        return "another nslb process"
    command = f" ({note['command']})" if note.get("command") else ""
    return f"process {note['pid']} on {note.get('host', '?')}{command}"
