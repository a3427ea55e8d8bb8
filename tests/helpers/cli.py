"""The installed ``nslb`` console script, run in a subprocess as a user runs it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

NSLB = shutil.which("nslb", path=str(Path(sys.executable).parent)) or "nslb"
QUICK = ["env.horizon=60", "run.progress=false"]
"""Overrides for a short run without a progress bar."""


def nslb(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``nslb args…`` in ``cwd``; its exit status and output (never raises on failure)."""
    return subprocess.run(
        [NSLB, *args], cwd=cwd, capture_output=True, text=True, timeout=300, check=False
    )


def said(stderr: str) -> list[str]:
    """The lines of ``stderr`` that say something, but for the announcements that compiled
    code is being compiled (a cold cache: a fresh machine, or a new version of nslb)."""
    return [line for line in stderr.splitlines() if line.strip() and not line.startswith(COMPILING)]


COMPILING = "nslb: compiling "
