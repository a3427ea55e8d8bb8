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


def expected_changes(model: OfflineModel, horizon: int) -> np.ndarray:
    """``p · n`` with ``p = 1 - min_s phi(s, s)``, per run, shape ``(R,)``."""
    stay = np.diagonal(model.transitions, axis1=1, axis2=2).min(axis=1)
    return (1.0 - stay) * horizon


def exp3s_tuning(
    problem: Problem, model: OfflineModel, n_experts: int
) -> tuple[np.ndarray, np.ndarray]:
    """Auer et al. (2002, section 8)'s tuning of Exp3.S for ``S`` switches, per run.

    ``alpha = 1 / n`` and ``gamma = min(1, sqrt(K (S ln(N n) + e) / ((e - 1) n)))`` with ``K``
    arms and ``N`` experts (``N = K`` for Exp3.S; for Exp4.S the share step spreads over ``N``
    experts, which turns Exp3.S's ``ln(K n)`` into ``ln(N n)``). ``S`` is
    :func:`expected_changes`.

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

    ``L = 1 +`` :func:`expected_changes` stationary segments, capped at 1.
    """
    n, K = problem.horizon, problem.n_arms
    segments = 1.0 + expected_changes(model, n)
    return np.minimum(1.0, np.sqrt(K * segments * np.log(n) / n))
