"""How many CPUs this process may use (its affinity: a cluster job's allocation)."""

from __future__ import annotations

import os


def usable_cpus() -> int:
    """How many CPUs this process may run on: its affinity (a cluster job's allocation)
    where the system tells it, else all of the machine's."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1
