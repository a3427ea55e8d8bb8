"""Stopping cleanly: SIGINT and SIGTERM, and jobs whose command has gone.

The ``nslb`` command turns SIGTERM (a cluster's preemption, ``kill``) into
:class:`Terminated`, raised like Ctrl-C's ``KeyboardInterrupt`` wherever the process is;
both unwind every job (results are written whole or not at all, so what is on disk resumes
byte-identically) up to the command, which ends with one line.

Jobs may run in other processes (Hydra's launchers). Each knows the process that started
the command (:data:`OWNER`, inherited through the environment) and checks, before it writes,
that its owner is still there: a worker orphaned by a killed command stops instead of
writing (:func:`check_owner`).
"""

from __future__ import annotations

import os

OWNER = "NSLB_OWNER_PID"
"""The environment variable naming the pid of the ``nslb`` command a job belongs to."""


class Terminated(BaseException):
    """The process was asked to stop (SIGTERM), or its command has gone.

    A ``BaseException``, like ``KeyboardInterrupt``: nothing that catches ``Exception``
    (a sweep's record of failed jobs, say) swallows it.
    """


def claim_ownership() -> None:
    """Make this process the owner of the jobs it starts (unless a command above it is)."""
    os.environ.setdefault(OWNER, str(os.getpid()))


def owner_alive() -> bool:
    """Whether the command that owns this process's jobs still runs."""
    owner = os.environ.get(OWNER)
    if owner is None or int(owner) == os.getpid():
        return True
    try:
        os.kill(int(owner), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def check_owner() -> None:
    """Raise :class:`Terminated` if the command that owns this job has gone."""
    if not owner_alive():
        raise Terminated(f"the nslb command (pid {os.environ.get(OWNER)}) has gone")


def stopped_by(error: BaseException) -> BaseException | None:
    """The interruption behind ``error`` — a ``KeyboardInterrupt`` or :class:`Terminated`,
    itself or among its causes (compiled code reports one as ``SystemError``) — or None."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        if isinstance(current, KeyboardInterrupt | Terminated):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None
