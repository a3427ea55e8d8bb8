"""Latent bandit models learned offline from logged interactions (docs/design.md §3.7):
Baum–Welch for an HMM whose emission depends on the state and the arm pulled (``em``), and
the posterior an agent is given of what it learned (``posterior``).

May import: ``nslb_cli.compiled`` and ``nslb_cli.common``.
"""

from nslb_cli.learning.em import Counts, Fit, Logs, Parameters, fit
from nslb_cli.learning.posterior import Posterior, align_states, estimation_errors, posterior

__all__ = [
    "Counts",
    "Fit",
    "Logs",
    "Parameters",
    "Posterior",
    "align_states",
    "estimation_errors",
    "fit",
    "posterior",
]
