"""Compiled kernels of LARL, LARL-ETC and AR-UCB (``larl``): features from
each run's last rewards and actions, and LinUCB with one ridge regression per arm.

Each kernel loops over the runs of a batch and works on one run's arrays with
``nslb_cli.agents.linalg`` (no BLAS, sums in index order), so a run's numbers do not depend
on its batch. Run ``r`` uses the first ``dims[r]`` coordinates of its padded arrays (LARL-ETC
chooses the number of lags per run). Imported where first used (numba is slow to import).
"""

from __future__ import annotations

import numpy as np

from nslb_cli.agents.linalg import add_outer, dot
from nslb_cli.compiled.jit import jit


@jit
def features(
    rewards: np.ndarray,
    actions: np.ndarray,
    lags: np.ndarray,
    n_arms: int,
    with_actions: bool,
    out: np.ndarray,
) -> None:
    """Each run's feature vector from its last ``lags[r]`` rounds (``rewards``, ``actions``:
    ``(R, L)``, oldest first, the last column the latest round), into ``out`` ``(R, d)``.

    ``with_actions`` (LARL): ``[r_i e_{a_i}]_i, [e_{a_i}]_i, 1``, ``2 s K + 1`` coordinates;
    otherwise (AR-UCB) the ``s`` rewards alone."""
    R, L = rewards.shape
    out[:] = 0.0
    for r in range(R):
        s = lags[r]
        for i in range(s):
            reward, arm = rewards[r, L - s + i], actions[r, L - s + i]
            if with_actions:
                out[r, i * n_arms + arm] = reward
                out[r, (s + i) * n_arms + arm] = 1.0
            else:
                out[r, i] = reward
        if with_actions:
            out[r, 2 * s * n_arms] = 1.0


@jit
def ucb_arms(
    x: np.ndarray,
    inverse: np.ndarray,
    theta: np.ndarray,
    dims: np.ndarray,
    alpha: float,
    spread: np.ndarray,
) -> np.ndarray:
    """LinUCB's arm per run with a regression per arm: ``argmax_a theta_a' x +
    alpha sqrt(x' V_a^-1 x)``, the lowest arm among ties; ``spread[r]`` gets ``V_a^-1 x``
    of the chosen arm (what ``update`` needs)."""
    R, K = theta.shape[0], theta.shape[1]
    arms = np.zeros(R, dtype=np.int64)
    u = np.empty(inverse.shape[-1])
    nonzero = np.empty(inverse.shape[-1], dtype=np.int64)
    for r in range(R):
        d = dims[r]
        m = 0  # LARL's features are mostly zeros: V^-1 x sums the rows of the others only
        for i in range(d):
            if x[r, i] != 0.0:
                nonzero[m] = i
                m += 1
        best = -np.inf
        for a in range(K):
            u[:d] = 0.0
            for i in nonzero[:m]:
                xi = x[r, i]
                for j in range(d):
                    u[j] += xi * inverse[r, a, i, j]
            score = dot(theta[r, a, :d], x[r, :d]) + alpha * np.sqrt(max(dot(x[r, :d], u[:d]), 0.0))
            if score > best:
                best = score
                arms[r] = a
                spread[r, :d] = u[:d]
    return arms


@jit
def update(
    x: np.ndarray,
    inverse: np.ndarray,
    theta: np.ndarray,
    dims: np.ndarray,
    arms: np.ndarray,
    rewards: np.ndarray,
    spread: np.ndarray,
) -> None:
    """The pulled arm's ridge regression after ``(x, y)``, in place: with ``u = V^-1 x`` and
    ``c = 1 + x' u``, ``theta <- theta + u (y - theta' x) / c`` and ``V^-1 <- V^-1 - u u' / c``
    (recursive least squares: ``theta = V^-1 b`` stays the ridge solution)."""
    for r in range(len(arms)):
        d, a = dims[r], arms[r]
        u = spread[r, :d]
        c = 1.0 + dot(x[r, :d], u)
        error = rewards[r] - dot(theta[r, a, :d], x[r, :d])
        for i in range(d):
            theta[r, a, i] += u[i] * error / c
        add_outer(inverse[r, a, :d, :d], u, -1.0 / c)
