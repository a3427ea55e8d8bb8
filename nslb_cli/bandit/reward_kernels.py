"""Compiled scalar twins of the reward models' posterior formulas (``nslb_cli.bandit.rewards``).

Compiled agents pass the model's ``kernel`` pair
``(family, parameter)``: the family code selects the formulas here (codes rather than
functions, which numba would not cache).

Statistics are the models' own (``nslb_cli.bandit.rewards.Statistics``), one entry:
``(first, second)`` = ``(m, v)`` for ``Gaussian`` (``parameter`` is
``sigma^2``), ``(m, n)`` for ``Bernoulli`` (``parameter`` unused).
Each function computes exactly what its numpy twin computes (tested).
"""

from __future__ import annotations

import numpy as np

from nslb_cli.bandit.rewards import GAUSSIAN_KERNEL as GAUSSIAN
from nslb_cli.bandit.rewards import SMALLEST_PROBABILITY
from nslb_cli.compiled.jit import jit


@jit
def predictive(
    family: int, parameter: float, reward: float, first: float, second: float
) -> tuple[float, float]:
    """``(exponent, scale)`` with the posterior predictive ``p(reward) = c · scale ·
    exp(exponent)``, ``c`` a constant of the family (``1 / sqrt(2 pi)`` for Gaussian
    rewards, 1 for Bernoulli ones): ``N(r; m, v + sigma^2)``, or ``m`` for a click and
    ``1 - m`` otherwise."""
    if family == GAUSSIAN:
        v = second + parameter
        return -0.5 * (reward - first) * (reward - first) / v, 1.0 / np.sqrt(v)
    probability = reward * first + (1.0 - reward) * (1.0 - first)
    return np.log(max(probability, SMALLEST_PROBABILITY)), 1.0


@jit
def learns(family: int, second: float) -> bool:
    """Whether a reward changes the statistics: false for a point mass (a known mean)."""
    if family == GAUSSIAN:
        return second > 0.0
    return second < np.inf


@jit
def update(
    family: int, parameter: float, reward: float, first: float, second: float
) -> tuple[float, float]:
    """The statistics after one more reward (``nslb_cli.bandit.rewards.RewardModel.update``)."""
    if family == GAUSSIAN:
        noise = parameter
        return (noise * first + second * reward) / (noise + second), second * noise / (
            noise + second
        )
    return first + (reward - first) / (second + 1.0), second + 1.0


@jit
def draw(family: int, generator: np.random.Generator, first: float, second: float) -> float:
    """One draw of the mean from the posterior (``nslb_cli.bandit.rewards.RewardModel.sample``):
    ``m + sqrt(v) z``, or ``Beta(n m, n (1 - m))`` (``m`` itself when ``n`` is infinite,
    without a draw)."""
    if family == GAUSSIAN:
        return first + np.sqrt(second) * generator.standard_normal()
    if second == np.inf:
        return first
    return generator.beta(second * first, second * (1.0 - first))
