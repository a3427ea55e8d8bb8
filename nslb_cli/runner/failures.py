"""Keep-going sweeps: a job that fails is recorded, the others still run, and the sweep
ends with one short summary of what failed.

Jobs may run in other processes (launcher plugins), so failures are files in the sweep
folder, ``.nslb-failures/<job number>.json``, cleared when a new sweep starts. With
``run.fail_fast=true`` the first failure also leaves a ``stop`` mark, and the jobs that
start after it skip their work.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from nslb_cli.config.registry import describe_error

FOLDER = ".nslb-failures"
STOP = "stop"


@dataclass(frozen=True)
class Failure:
    """One failed job: its overrides and the first line of its error."""

    overrides: list[str]
    error: str


class Failures:
    """The failure records of the sweep writing below ``root``."""

    def __init__(self, root: Path) -> None:
        self.folder = root / FOLDER

    def clear(self) -> None:
        """Forget the failures of an earlier sweep into the same folder."""
        shutil.rmtree(self.folder, ignore_errors=True)

    def record(self, job: int, overrides: list[str], error: BaseException, stop: bool) -> None:
        """Record that job number ``job`` failed; ``stop``: ask later jobs to skip."""
        self.folder.mkdir(parents=True, exist_ok=True)
        entry = {"overrides": overrides, "error": describe_error(error)}
        (self.folder / f"{job}.json").write_text(json.dumps(entry), encoding="utf-8")
        if stop:
            (self.folder / STOP).touch()

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
