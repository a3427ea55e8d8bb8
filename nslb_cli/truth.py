"""The one narrow view of an environment's truth that an agent may be given.

Agents are built from the problem, the offline model and their random streams only. The
oracle, a reference for plots, is the exception: it declares ``sees_truth`` and receives a
:class:`Truth`, never the world itself.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Truth:
    """What only a reference agent may see, for every run and round.

    Attributes:
        states: ``(R, n)`` the true latent state ``S_t``.
        mean_rewards: ``(R, n, K)`` ``mu(a, X_t, S_t; theta*)`` of every arm.
    """

    states: np.ndarray
    mean_rewards: np.ndarray
