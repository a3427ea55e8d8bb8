"""Where things are, relative to the repository: one place, whatever a test's folder depth."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
"""The repository's root (``pyproject.toml``, ``README.md``, ``conf/``, ``examples/``)."""
CONF = REPO / "conf"
"""nslb's Hydra configs (shipped inside the package as ``nslb_cli.conf``)."""
EXAMPLE = REPO / "examples" / "epsilon_greedy"
"""The example plugin's source folder."""
SHARED = REPO.parent / "shared"
"""Data shared between checkouts, beside the repository."""
ML_100K = SHARED / "data" / "movielens" / "ml-100k"
"""The real ML-100K release, when present (tests that need it skip otherwise)."""
