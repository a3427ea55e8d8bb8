"""Compiled kernels of the linear agents (``linear_changepoint``) and of
their change detector (``LinearShiftDetector``).

Each kernel loops over the runs of a batch and works on one run's arrays at a time with
``nslb_cli.agents.linalg``, in place where it updates statistics; the classes' docstrings
give the equations. Imported where first used (numba is slow to import and load, see
``nslb_cli.agents.linalg``).
"""

from __future__ import annotations

import numpy as np

from nslb_cli.agents.linalg import (
    add_outer,
    add_scaled,
    cholesky,
    cholesky_solve,
    dot,
    symmetric_matvec,
)
from nslb_cli.compiled.jit import jit


@jit
def sherman_morrison(inverse: np.ndarray, x: np.ndarray) -> None:
    """``A^-1 <- A^-1 - u u' / (1 + x' u)`` with ``u = A^-1 x``, for every run, in place."""
    u = np.empty(inverse.shape[-1])
    for r in range(len(x)):
        symmetric_matvec(inverse[r], x[r], u)
        add_outer(inverse[r], u, -1.0 / (1.0 + dot(x[r], u)))


@jit
def ucb_arms(x: np.ndarray, inverse: np.ndarray, moment: np.ndarray, alpha: float) -> np.ndarray:
    """LinUCB's arm per run: ``argmax_a x_a' theta_hat + alpha sqrt(x_a' A^-1 x_a)``, the
    lowest index among ties."""
    R, K, d = x.shape
    arms = np.zeros(R, dtype=np.int64)
    theta = np.empty(d)
    spread = np.empty(d)
    for r in range(R):
        symmetric_matvec(inverse[r], moment[r], theta)
        best = -np.inf
        for a in range(K):
            symmetric_matvec(inverse[r], x[r, a], spread)
            score = dot(x[r, a], theta) + alpha * np.sqrt(max(dot(x[r, a], spread), 0.0))
            if score > best:
                best = score
                arms[r] = a
    return arms


@jit
def thompson_arms(
    x: np.ndarray,
    inverse: np.ndarray,
    moment: np.ndarray,
    noise: np.ndarray,
    v: float,
    jitter: float,
) -> np.ndarray:
    """LinTS's arm per run: ``argmax_a x_a' theta`` with ``theta = theta_hat + v L z``, ``L``
    the Cholesky factor of ``A^-1 + jitter tr(A^-1) / d I`` and ``z`` the run's ``noise``."""
    R, K, d = x.shape
    arms = np.zeros(R, dtype=np.int64)
    theta = np.empty(d)
    factor = np.empty((d, d))
    for r in range(R):
        symmetric_matvec(inverse[r], moment[r], theta)
        cholesky(inverse[r], jitter * np.trace(inverse[r]) / d, factor)
        for i in range(d):
            theta[i] += v * dot(factor[i, : i + 1], noise[r, : i + 1])
        best = -np.inf
        for a in range(K):
            score = dot(x[r, a], theta)
            if score > best:
                best = score
                arms[r] = a
    return arms


@jit
def record_round(
    x: np.ndarray,
    y: np.ndarray,
    window_x: np.ndarray,
    window_y: np.ndarray,
    counts: np.ndarray,
    gram_new: np.ndarray,
    gram_old: np.ndarray,
    moment_new: np.ndarray,
    weights: np.ndarray,
    ridge: float,
    statistic: np.ndarray,
) -> None:
    """One round of ``LinearShiftDetector`` for every run, in
    place (its docstring)."""
    R, tau, d = window_x.shape
    half = tau // 2
    factor = np.empty((d, d))
    w = np.empty(d)
    for r in range(R):
        c = counts[r]
        slot = c % tau  # holds the round that leaves the window
        if c >= tau:
            add_outer(gram_old[r], window_x[r, slot], -1.0)
        if c >= half:  # the round tau / 2 back moves from the newest half to the older
            middle = (c - half) % tau
            add_outer(gram_new[r], window_x[r, middle], -1.0)
            add_scaled(moment_new[r], window_x[r, middle], -window_y[r, middle])
            add_outer(gram_old[r], window_x[r, middle], 1.0)
        window_x[r, slot] = x[r]
        window_y[r, slot] = y[r]
        add_outer(gram_new[r], x[r], 1.0)
        add_scaled(moment_new[r], x[r], y[r])
        c += 1
        counts[r] = c
        statistic[r] = np.nan
        if c >= half:
            cholesky(gram_new[r], ridge, factor)
            cholesky_solve(factor, moment_new[r], w)
            if c >= tau:  # W' is W of tau / 2 rounds ago, kept in the same slot
                statistic[r] = _sigma_distance(w, weights[r, c % half], gram_new[r], gram_old[r])
            weights[r, c % half] = w


@jit
def _sigma_distance(
    w: np.ndarray, w_old: np.ndarray, gram: np.ndarray, gram_old: np.ndarray
) -> float:
    """``||w - w_old||_Sigma`` with ``Sigma = gram + gram_old``."""
    diff = w - w_old
    total = 0.0
    for i in range(len(w)):
        row = 0.0
        for j in range(len(w)):
            row += (gram[i, j] + gram_old[i, j]) * diff[j]
        total += diff[i] * row
    return np.sqrt(max(total, 0.0))
