"""Latent bandit models learned offline from logged interactions (docs/design.md §3.7):
Baum–Welch for an HMM whose emission depends on the state and the arm pulled (``em``), and
the posterior an agent is given of what it learned (``posterior``).

May import: ``nslb_cli.compiled`` and ``nslb_cli.common``.
"""

import hashlib
from functools import cache
from pathlib import Path

from nslb_cli.learning.em import Counts, Fit, Logs, Parameters, fit
from nslb_cli.learning.posterior import Posterior, align_states, estimation_errors, posterior


@cache
def code_version() -> str:
    """A hash of this package's code: a cached fit made by other code is not this code's."""
    sources = sorted(Path(__file__).parent.glob("*.py"))
    return hashlib.sha256(b"".join(path.read_bytes() for path in sources)).hexdigest()[:16]


__all__ = [
    "Counts",
    "Fit",
    "Logs",
    "Parameters",
    "Posterior",
    "align_states",
    "code_version",
    "estimation_errors",
    "fit",
    "posterior",
]
