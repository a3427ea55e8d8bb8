"""The ``nslb`` command in a test: in the test's process (``nslb``), or as the installed
console script in a subprocess (``nslb_process``) where the promise is about a process
(signals, exit of workers, environment, output written below Python)."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import subprocess
import sys
import traceback
from pathlib import Path

from nslb_cli.cli import main

NSLB = shutil.which("nslb", path=str(Path(sys.executable).parent)) or "nslb"
QUICK = ["env.horizon=60", "run.progress=false"]
"""Overrides for a short run without a progress bar."""


def nslb(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``nslb args…`` in ``cwd``, run by the console script's ``main`` in this process; its
    exit status and output as the process would have them (a traceback and status 1 for an
    uncaught error; never raises on failure)."""
    out, err = io.StringIO(), io.StringIO()
    status = 0
    here = os.getcwd()
    try:
        os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main(list(args))
            except SystemExit as stop:
                status = _status(stop.code, err)
            except Exception:
                traceback.print_exc()
                status = 1
    finally:
        os.chdir(here)
    return subprocess.CompletedProcess([NSLB, *args], status, out.getvalue(), err.getvalue())


def _status(code: object, err: io.StringIO) -> int:
    """The exit status of ``SystemExit(code)``: ``None`` 0, a number itself, else the text on
    stderr and 1 (as Python's own exit does)."""
    if code is None or isinstance(code, int):
        return code or 0
    print(code, file=err)
    return 1


def nslb_process(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``nslb args…`` in ``cwd`` as a user runs it: the installed console script in a
    subprocess; its exit status and output (never raises on failure)."""
    return subprocess.run(
        [NSLB, *args], cwd=cwd, capture_output=True, text=True, timeout=300, check=False
    )


def said(stderr: str) -> list[str]:
    """The lines of ``stderr`` that say something, but for the announcements that compiled
    code is being compiled (a cold cache: a fresh machine, or a new version of nslb)."""
    return [line for line in stderr.splitlines() if line.strip() and not line.startswith(COMPILING)]


COMPILING = "nslb: compiling "
