"""Jobs whose command has gone stop instead of writing.

A job checks its command (``OWNER``) before it writes (``check_owner``); a worker also
ends itself once its command has gone (``end_with_owner``).
"""

from __future__ import annotations

import os
import socket

from nslb_cli.common.apart import end_when
from nslb_cli.common.stopping import Terminated
from nslb_cli.store.atomic import process_alive

OWNER = "NSLB_OWNER_PID"
"""The environment variable naming the ``nslb`` command a job belongs to: ``<host>:<pid>``
(a bare pid means this machine)."""


def claim_ownership() -> None:
    """Make this process the owner of the jobs it starts (even under another command)."""
    os.environ[OWNER] = f"{socket.gethostname()}:{os.getpid()}"


def owner_alive(owner: str | None = None) -> bool:
    """Whether the command that owns this process's jobs (default: ``OWNER``'s) still runs;
    ``True`` when it runs on another machine."""
    owner = os.environ.get(OWNER) if owner is None else owner
    if owner is None:
        return True
    host, _, pid = owner.rpartition(":")
    return bool(host and host != socket.gethostname()) or process_alive(int(pid))


def is_command() -> bool:
    """Whether this process is the command that owns its jobs (not one of its workers)."""
    return os.environ.get(OWNER, "").rpartition(":")[2] == str(os.getpid())


def in_worker() -> bool:
    """Whether this process is a worker of a command (a launcher's), not the command."""
    return OWNER in os.environ and not is_command()


_watched: list[str] = []  # the owner a thread of end_with_owner watches, once per process


def end_with_owner() -> None:
    """In a worker on this machine: end it, writing nothing more, once its command has gone
    (``end_when``). Started once per process."""
    owner = os.environ.get(OWNER)
    if _watched or owner is None or is_command():
        return  # the command itself (every process that runs one claims its jobs)
    _watched.append(owner)
    end_when(lambda: not owner_alive(owner), "nslb-owner")


def check_owner() -> None:
    """Raise ``Terminated`` if the command that owns this job has gone."""
    if not owner_alive():
        raise Terminated(f"the nslb command (pid {os.environ.get(OWNER)}) has gone")
