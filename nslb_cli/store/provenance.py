"""Provenance: which code, libraries and command produced a run folder's results, and how
long they took to simulate, one ``provenance.jsonl`` line per batch of seeds written
(docs/design.md §6)."""

from __future__ import annotations

import json
import math
import os
import platform
import shlex
import subprocess
import sys
from datetime import datetime, timezone
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

from nslb_cli.store.atomic import atomic_write_bytes

FILE = "provenance.jsonl"
COMMAND_VARIABLE = "NSLB_COMMAND"  # the user's command line, passed on to launcher workers
SECONDS = "seconds"  # a line's field: the wall-clock seconds its batch of seeds took to simulate


def remember_command(arguments: list[str]) -> None:
    """Keep the user's command line for the jobs (also those in other processes)."""
    os.environ[COMMAND_VARIABLE] = shlex.join(["nslb", *arguments])


@cache
def environment() -> dict[str, Any]:
    """Versions of nslb and the libraries that decide its numbers, and the git commit of the
    checkout nslb runs from (``+dirty`` with uncommitted changes; ``None`` outside one)."""
    import hydra
    import numpy

    describe = ["git", "describe", "--always", "--dirty=+dirty", "--abbrev=40", "--exclude=*"]
    source = Path(__file__).resolve().parent
    try:
        git = subprocess.run(
            describe, cwd=source, capture_output=True, text=True, timeout=5, check=True
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        git = None
    return {
        "nslb": metadata.version("nslb-cli"),
        "git": git,
        "python": platform.python_version(),
        "numpy": numpy.__version__,
        "hydra": hydra.__version__,
    }


def command() -> str:
    """The user's command line (the one that started this job's sweep)."""
    return os.environ.get(COMMAND_VARIABLE, shlex.join(sys.argv))


def record(
    folder: Path,
    seeds: list[int],
    numbers: str | None = None,
    *,
    seconds: float | None = None,
    engine: str | None = None,
) -> None:
    """Add this invocation's line to ``folder``'s provenance, with ``numbers``, the wall-clock
    ``seconds`` that simulating ``seeds`` took and the ``engine`` that simulated them when
    given; the file is written anew atomically: a killed writer cannot leave half a line."""
    entry: dict[str, Any] = {
        "time": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        **environment(),
        "command": command(),
        "seeds": seeds,
    }
    if numbers is not None:
        entry["numbers"] = numbers
    if seconds is not None:
        entry[SECONDS] = seconds
    if engine is not None:
        entry["engine"] = engine
    path = folder / FILE
    try:
        before = path.read_bytes()
    except FileNotFoundError:
        before = b""
    if before and not before.endswith(b"\n"):
        before += b"\n"
    atomic_write_bytes(path, before + (json.dumps(entry) + "\n").encode())


def entries(folder: Path) -> list[dict[str, Any] | None]:
    """The entries of ``folder``'s provenance, in order, ``None`` for a damaged line."""
    try:
        lines = (folder / FILE).read_bytes().splitlines()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return []
    found: list[dict[str, Any] | None] = []
    for line in filter(bytes.strip, lines):
        try:
            entry = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            entry = None
        found.append(entry if isinstance(entry, dict) else None)
    return found


def versions(folder: Path) -> set[str]:
    """The nslb versions that wrote results into ``folder`` (empty if unrecorded)."""
    return {str(e["nslb"]) for e in entries(folder) if e is not None and "nslb" in e}


def numbers(folder: Path) -> tuple[set[str], set[int]]:
    """What decided the numbers of ``folder``'s seeds (each entry's ``numbers``, or why they
    are unknown), and the seeds the entries record."""
    found, recorded = set(), set()
    for entry in entries(folder):
        if entry is None:
            found.add("a damaged provenance.jsonl line")
            continue
        found.add(str(entry.get("numbers") or "none recorded (an earlier build)"))
        listed = entry.get("seeds")
        recorded |= {s for s in listed if isinstance(s, int)} if isinstance(listed, list) else set()
    return found, recorded


def seconds_by_seed(folder: Path) -> dict[int, float]:
    """Each seed's share of the simulation seconds its batch recorded (a batch's seconds
    split evenly over its seeds), from the last line listing the seed, the one whose
    simulation wrote it; seeds whose line records no positive, finite seconds are left out."""
    shares: dict[int, float | None] = {}
    for entry in entries(folder):
        listed = entry.get("seeds") if entry is not None else None
        if entry is None or not isinstance(listed, list) or not listed:
            continue
        seconds = _seconds(entry.get(SECONDS))
        share = None if seconds is None else seconds / len(listed)
        shares |= {seed: share for seed in listed if isinstance(seed, int)}
    return {seed: share for seed, share in shares.items() if share is not None}


def _seconds(value: object) -> float | None:
    """A recorded ``seconds`` as a float: ``None`` unless a positive, finite number."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return None
    return float(value) if math.isfinite(value) and value > 0 else None
