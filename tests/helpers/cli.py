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
