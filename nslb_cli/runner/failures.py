"""Keep-going sweeps: a job that fails is recorded, the others still run, and the sweep
ends with one short summary of what failed.

Jobs may run in other processes (launcher plugins), so failures are files in the sweep
folder: ``.nslb-failures/<sweep>/<job number>.json``, where ``<sweep>`` names one ``nslb
run`` command (:data:`SWEEP`, set by the command and inherited by its workers). Two sweeps
into one folder therefore keep separate records and never stop each other: with
``run.fail_fast=true`` the first failure leaves a ``stop`` mark in its own sweep's records
only, and that sweep's later jobs skip their work. A new command removes the records of
sweeps whose command has ended.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import time
from dataclasses import dataclass
from pathlib import Path

from nslb_cli.config.registry import describe_error
from nslb_cli.store.atomic import atomic_write_text

FOLDER = ".nslb-failures"
STOP = "stop"
SWEEP = "NSLB_SWEEP"
"""The environment variable naming the sweep of this command: ``<host>-<pid>-<start>``."""


@dataclass(frozen=True)
class Failure:
    """One failed job: its overrides and the first line of its error."""

    overrides: list[str]
    error: str


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
            if owner_host == host and not _alive(rest):
                shutil.rmtree(old, ignore_errors=True)
        shutil.rmtree(self.folder, ignore_errors=True)

    def record(self, job: int, overrides: list[str], error: BaseException, stop: bool) -> None:
        """Record that job number ``job`` failed; ``stop``: ask later jobs to skip."""
        entry = {"overrides": overrides, "error": describe_error(error)}
        atomic_write_text(self.folder / f"{job}.json", json.dumps(entry))
        if stop:
            atomic_write_text(self.folder / STOP, "")

    def stopped(self) -> bool:
        """Whether a failure asked the remaining jobs to stop (``run.fail_fast``)."""
        return (self.folder / STOP).exists()

    def collect(self) -> list[Failure]:
        """The recorded failures, in job order."""
        if not self.folder.is_dir():
            return []
        paths = sorted(self.folder.glob("*.json"), key=lambda p: int(p.stem))
        return [Failure(**json.loads(p.read_text(encoding="utf-8"))) for p in paths]

    def summary(self, jobs: int) -> str:
        """A few lines: how many of ``jobs`` failed, then each one's overrides and error."""
        failed = self.collect()
        lines = [f"nslb: {len(failed)} of {jobs} sweep jobs failed:"]
        lines += [f"  {' '.join(f.overrides) or '(no overrides)'}: {f.error}" for f in failed]
        if self.stopped():
            lines.append("  (run.fail_fast=true: the jobs after the first failure were skipped)")
        return "\n".join(lines)


def _alive(pid: str) -> bool:
    try:
        os.kill(int(pid), 0)
    except (ValueError, ProcessLookupError):
        return False
    except PermissionError:
        return True
    return True
