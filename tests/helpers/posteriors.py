"""umTS's reward posteriors laid out per particle, for tests to read.

The pool keeps each statistic once per slot (``SlotPool``);
``gather`` copies it out per particle: ``(R, N, S, ...)``.
"""

from __future__ import annotations

import numpy as np

from nslb_cli.agents.umts.arm_posterior import ArmPosterior
from nslb_cli.agents.umts.linear_posterior import LinearPosterior
from nslb_cli.bandit.rewards import Statistics


def statistics(posterior: ArmPosterior | LinearPosterior) -> Statistics:
    """The statistics of every particle and state (copies): the reward model's two per arm,
    ``(R, N, S, K)`` each, or a regression's mean ``m`` ``(R, N, S, d)`` and covariance ``C``
    ``(R, N, S, d, d)``."""
    first, second = posterior.stats
    return posterior.pool.gather(first), posterior.pool.gather(second)


def variance(posterior: ArmPosterior) -> np.ndarray:
    """The posterior variance of every particle, state and arm, ``(R, N, S, K)``."""
    return posterior.reward_model.variance(statistics(posterior))
