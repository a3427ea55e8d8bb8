"""Fault injection for the tests of what nslb guarantees: commands stopped by a signal at a
chosen moment, snapshots of what a folder holds, limits on file sizes."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tests.helpers.cli import NSLB

RESULT_NAMES = ("config.yaml", "data.json")


@dataclass(frozen=True)
class Stopped:
    """A command that was sent a signal: its exit status, stderr and whether the signal came
    before it ended on its own."""

    returncode: int
    stderr: str
    signalled: bool


def stop_after(
    args: list[str],
    delay: float,
    signum: int,
    cwd: Path,
    env: dict[str, str] | None = None,
) -> Stopped:
    """Run ``nslb args…``, send ``signum`` after ``delay`` seconds (if it still runs; never
    before the process handles the signal: Python's own start-up runs no nslb code) and
    wait for it to end."""
    process = subprocess.Popen(
        [NSLB, *args],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + delay
    while process.poll() is None and not (catches(process.pid, signum) or signum == signal.SIGKILL):
        time.sleep(0.005)  # Python starting: no handler (none of nslb's code runs yet)
    while process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    signalled = process.poll() is None
    if signalled:
        process.send_signal(signum)
    _, stderr = process.communicate(timeout=120)
    return Stopped(process.returncode, stderr, signalled)


def catches(pid: int, signum: int) -> bool:
    """Whether process ``pid`` has a handler for ``signum`` (Linux: ``SigCgt`` in
    ``/proc/<pid>/status``); on other systems, assume it does."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return True
    for line in status.splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) >> (signum - 1) & 1)
    return True


def expected_exit(signum: int) -> int:
    """The exit status nslb promises for a signal: 130 for SIGINT, 143 for SIGTERM."""
    return {signal.SIGINT: 130, signal.SIGTERM: 143}[signal.Signals(signum)]


def one_line_for(signum: int) -> str:
    return "nslb: interrupted" if signum == signal.SIGINT else "nslb: terminated"


def snapshot(root: Path, names: Callable[[Path], bool] | None = None) -> dict[str, bytes]:
    """The bytes of every result file below ``root`` (seed files, config.yaml, data.json;
    hidden folders left out), by path relative to ``root``."""
    wanted = names or (lambda p: p.name.startswith("seed=") or p.name in RESULT_NAMES)
    found = {}
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if path.is_file() and wanted(path) and not any(p.startswith(".") for p in relative.parts):
            found[relative.as_posix()] = path.read_bytes()
    return found


def temporaries(root: Path) -> list[Path]:
    """Half-written files nslb left below ``root`` (none may outlive a finished command)."""
    return sorted(root.rglob(".*.tmp"))


def file_size_limit(limit: int) -> Callable[[], None]:
    """A ``preexec_fn`` limiting the files the child writes to ``limit`` bytes (Python
    ignores SIGXFSZ, so a larger write fails with EFBIG, as on a full disk)."""

    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply
