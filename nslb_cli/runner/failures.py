"""Keep-going sweeps: a job that fails is recorded, the others still run, and the sweep
ends with one short summary of what failed.

Records are ``.nslb-failures/<sweep>/<job number>.json``, ``<sweep>`` naming one command
(``SWEEP``), so that two sweeps into one folder keep theirs apart.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import time
from dataclasses import dataclass
from pathlib import Path

from nslb_cli.runner.owner import is_command
from nslb_cli.store.atomic import atomic_write_text, process_alive

FOLDER = ".nslb-failures"
STOP = "stop"
SWEEP = "NSLB_SWEEP"
"""The environment variable naming the sweep of this command: ``<host>-<pid>-<start>``."""


@dataclass(frozen=True)
class Failure:
    """One failed job: its overrides and the first line of its error."""

    overrides: list[str]
    error: str


_unwritten: dict[Path, dict[int, Failure]] = {}
"""Failures of this process's jobs whose records could not be written, by records folder."""
_stopped: set[Path] = set()
"""Records folders whose stop mark could not be written."""


def start_sweep() -> str:
    """Name this command's sweep (for its workers too) and return the name."""
    os.environ[SWEEP] = f"{socket.gethostname()}-{os.getpid()}-{time.time_ns()}"
    return os.environ[SWEEP]


class Failures:
    """The failure records of this command's sweep writing below ``root``."""

    def __init__(self, root: Path) -> None:
        self.root = root / FOLDER
        self.folder = self.root / os.environ.get(SWEEP, "sweep")

    def clear(self) -> None:
        """Forget the records of sweeps into the same folder whose commands have ended."""
        host = socket.gethostname()
        for old in self.root.glob("*/"):
            owner_host, _, rest = old.name.rpartition("-")[0].rpartition("-")
            if owner_host == host and not process_alive(rest):
                shutil.rmtree(old, ignore_errors=True)
        shutil.rmtree(self.folder, ignore_errors=True)

    def record(self, job: int, overrides: list[str], error: str, stop: bool) -> None:
        """Record that job number ``job`` failed with the one line ``error``; ``stop``: ask
        later jobs to skip. An unwritable record stays in the command's memory; a worker raises."""
        entry = {"overrides": overrides, "error": error}
        try:
            atomic_write_text(self.folder / f"{job}.json", json.dumps(entry))
            if stop:
                atomic_write_text(self.folder / STOP, "")
        except OSError:
            if not is_command():  # a worker's memory dies with it: the launcher must know
                raise
            _unwritten.setdefault(self.folder, {})[job] = Failure(overrides, error)
            if stop:
                _stopped.add(self.folder)

    def stopped(self) -> bool:
        """Whether a failure asked the remaining jobs to stop (``run.fail_fast``)."""
        return self.folder in _stopped or (self.folder / STOP).exists()

    def collect(self) -> list[Failure]:
        """The recorded failures, in job order."""
        found = dict(_unwritten.get(self.folder, {}))
        if self.folder.is_dir():
            for path in self.folder.glob("*.json"):
                found[int(path.stem)] = Failure(**json.loads(path.read_text(encoding="utf-8")))
        return [found[job] for job in sorted(found)]

    def summary(self, jobs: int) -> str:
        """A few lines: how many of ``jobs`` failed, then each one's overrides and error."""
        failed = self.collect()
        lines = [f"nslb: {len(failed)} of {jobs} sweep jobs failed:"]
        lines += [f"  {' '.join(f.overrides) or '(no overrides)'}: {f.error}" for f in failed]
        if self.stopped():
            lines.append("  (run.fail_fast=true: the jobs after the first failure were skipped)")
        return "\n".join(lines)
