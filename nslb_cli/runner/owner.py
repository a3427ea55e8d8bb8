"""Jobs whose command has gone stop instead of writing.

Jobs may run in other processes (Hydra's launchers). Each knows the process that started
the command (:data:`OWNER`, inherited through the environment) and checks, before it writes,
that its owner is still there: a worker orphaned by a killed command raises
:class:`~nslb_cli.config.stopping.Terminated` instead of writing (:func:`check_owner`).
The owner is named by machine and pid: a job on another machine (a SLURM node, a Ray
worker) cannot see the command's process and does not check.
"""

from __future__ import annotations

import os
import socket

from nslb_cli.config.stopping import Terminated

OWNER = "NSLB_OWNER_PID"
"""The environment variable naming the ``nslb`` command a job belongs to: ``<host>:<pid>``
(a bare pid means this machine)."""


def claim_ownership() -> None:
    """Make this process the owner of the jobs it starts (unless a command above it is)."""
    os.environ.setdefault(OWNER, f"{socket.gethostname()}:{os.getpid()}")


def owner_alive() -> bool:
    """Whether the command that owns this process's jobs still runs (``True`` when it runs
    on another machine, where it cannot be seen)."""
    owner = os.environ.get(OWNER)
    if owner is None:
        return True
    host, _, pid = owner.rpartition(":")
    if (host and host != socket.gethostname()) or int(pid) == os.getpid():
        return True
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def check_owner() -> None:
    """Raise :class:`Terminated` if the command that owns this job has gone."""
    if not owner_alive():
        raise Terminated(f"the nslb command (pid {os.environ.get(OWNER)}) has gone")
