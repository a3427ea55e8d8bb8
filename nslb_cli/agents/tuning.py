"""Default hyperparameters of the baselines, computed from the problem and the offline model.

The baselines' theory tunes them for the horizon ``n`` and the number of changes. Agents
read the expected number of changes from the offline model's transition point estimate,
as the paper's analysis does (Theorem 1): with ``p = 1 - min_s phi(s, s)``, a run of ``n``
rounds has at most ``p · n`` changes in expectation, i.e. ``L = 1 + p · n`` stationary
segments. Model-free agents use the model for nothing else. Every such default can be
overridden in the agent's config.
"""

from __future__ import annotations

import numpy as np

from nslb_cli.bandit.problem import OfflineModel, Problem
from nslb_cli.common import validators as check

MIN_EXPLORATION = 1e-9
"""Smallest positive forced-exploration rate ``gamma``. The exploration period
``floor(K / gamma)`` is an int64: ``gamma = 1e-300`` overflows it (numpy warns of an invalid
cast). At 1e-9 the period is ``K · 1e9`` rounds, far beyond any horizon, and fits int64 for
any number of arms that fits in memory (up to 9e9)."""


def expected_changes(model: OfflineModel, horizon: int) -> np.ndarray:
    """``p · n`` with ``p = 1 - min_s phi(s, s)``, per run, shape ``(R,)``."""
    stay = np.diagonal(model.transitions, axis1=1, axis2=2).min(axis=1)
    return (1.0 - stay) * horizon


def given_or(value: float | None, default: np.ndarray) -> np.ndarray:
    """A parameter per run, ``(R,)``: ``value`` in every run where it is configured, else the
    computed ``default``; in the default's dtype."""
    return default if value is None else np.full(default.shape, value, dtype=default.dtype)


def exp3s_tuning(
    problem: Problem, model: OfflineModel, n_experts: int
) -> tuple[np.ndarray, np.ndarray]:
    """Auer et al. (2002, section 8)'s tuning of Exp3.S for ``S`` switches, per run.

    ``alpha = 1 / n`` and ``gamma = min(1, sqrt(K (S ln(N n) + e) / ((e - 1) n)))`` with ``K``
    arms and ``N`` experts (``N = K`` for Exp3.S; for Exp4.S the share step spreads over ``N``
    experts, which turns Exp3.S's ``ln(K n)`` into ``ln(N n)``). ``S`` is
    ``expected_changes``.

    Returns:
        ``(gamma, alpha)``, each ``(R,)``.
    """
    n, K = problem.horizon, problem.n_arms
    switches = expected_changes(model, n)
    gamma = np.minimum(
        1.0, np.sqrt(K * (switches * np.log(n_experts * n) + np.e) / ((np.e - 1.0) * n))
    )
    return gamma, np.full_like(gamma, 1.0 / n)


def cao_exploration(problem: Problem, model: OfflineModel) -> np.ndarray:
    """Cao et al. (2019)'s forced-exploration fraction ``gamma = sqrt(K L log n / n)``, ``(R,)``.

    ``L = 1 +`` ``expected_changes`` stationary segments, capped at 1.
    """
    n, K = problem.horizon, problem.n_arms
    segments = 1.0 + expected_changes(model, n)
    return np.minimum(1.0, np.sqrt(K * segments * np.log(n) / n))


def check_exploration(rate: float | None, key: str) -> None:
    """A configured forced-exploration rate: ``None`` (computed), 0 (none) or a probability of
    at least ``MIN_EXPLORATION``."""
    if rate is not None:
        check.probability(rate, key)
        check.require(
            rate == 0 or rate >= MIN_EXPLORATION,
            key,
            f"must be 0 (no forced exploration) or >= {MIN_EXPLORATION:g} (smaller ones overflow "
            f"the exploration period K / {key}), got {rate}",
        )


def exploration_period(rate: np.ndarray, n_arms: int) -> np.ndarray:
    """The forced-exploration period ``floor(K / rate)`` per run, ``(R,)`` int64; 0 marks the
    runs without forced exploration (``rate = 0``)."""
    with np.errstate(divide="ignore"):
        return np.where(rate > 0, np.floor(n_arms / rate), 0).astype(np.int64)
