"""Plugins for tests: installed packages faked by a dist-info folder on a path entry.

A folder ``<name>-<version>.dist-info`` with ``METADATA`` and ``entry_points.txt`` is all
``importlib.metadata`` needs to find a package's entry points, so putting such a folder on
``sys.path`` (or ``PYTHONPATH``, for a subprocess) is a cheap stand-in for ``pip install``.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import tomllib

from tests.helpers.cli import NSLB
from tests.helpers.paths import EXAMPLE


def fake_distribution(
    where: Path, name: str, version: str, points: dict[str, dict[str, str]]
) -> Path:
    """A dist-info folder in ``where`` declaring ``points`` (group -> name -> value)."""
    info = where / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    sections = [
        f"[{group}]\n" + "".join(f"{key} = {value}\n" for key, value in entries.items())
        for group, entries in points.items()
    ]
    (info / "entry_points.txt").write_text("\n".join(sections))
    return info


def example_entry_points() -> dict[str, dict[str, str]]:
    """The entry points the example plugin's pyproject.toml declares."""
    project = tomllib.loads((EXAMPLE / "pyproject.toml").read_text())["project"]
    return project["entry-points"]


def fake_example_install(where: Path) -> str:
    """The example plugin, "installed" from its source folder: the PYTHONPATH to use."""
    fake_distribution(where, "nslb-epsilon-greedy", "0.1.0", example_entry_points())
    return os.pathsep.join([str(where), str(EXAMPLE / "src")])


def nslb_with(pythonpath: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run the ``nslb`` console script with ``pythonpath`` in front of its module path."""
    env = {**os.environ, "PYTHONPATH": pythonpath}
    return subprocess.run(
        [NSLB, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False
    )
