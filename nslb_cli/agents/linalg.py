"""Linear algebra on one run's small arrays, compiled with numba.

The linear agents and their detector touch a few ``d``-vectors and ``d × d`` matrices per run
every round (``d = 20`` on MovieLens); batched numpy calls on arrays that small spend their
time in overhead and temporaries. These functions work on one run's arrays and are called
from compiled kernels that loop over the runs, so a run's numbers never depend on its batch:
no BLAS, and each sum is taken in index order (no fastmath). Where a matrix is symmetric,
``m x`` is computed as ``sum_i x_i m[i, :]``, over contiguous rows that the compiler
vectorises.

numba takes 0.3–0.6 s to import (and loads scipy), and loading the first cached kernel
another 0.3 s: only modules imported where a kernel is first needed may import this one, so
that runs which need none of it do not pay for it.
"""

from __future__ import annotations

import numpy as np

from nslb_cli.compiled.jit import jit


@jit
def dot(x: np.ndarray, y: np.ndarray) -> float:
    """``x' y``."""
    total = 0.0
    for i in range(len(x)):
        total += x[i] * y[i]
    return total


@jit
def symmetric_matvec(m: np.ndarray, x: np.ndarray, out: np.ndarray) -> None:
    """``out = m x`` for a symmetric ``m``."""
    out[:] = 0.0
    for i in range(len(x)):
        xi = x[i]
        for j in range(len(out)):
            out[j] += xi * m[i, j]


@jit
def add_outer(m: np.ndarray, x: np.ndarray, scale: float) -> None:
    """``m += scale · x x'`` (exactly symmetric: ``x_i x_j = x_j x_i``)."""
    for i in range(len(x)):
        for j in range(len(x)):
            m[i, j] += x[i] * x[j] * scale


@jit
def add_scaled(v: np.ndarray, x: np.ndarray, scale: float) -> None:
    """``v += scale · x``."""
    for i in range(len(x)):
        v[i] += x[i] * scale


@jit
def cholesky(m: np.ndarray, shift: float, factor: np.ndarray) -> None:
    """Lower-triangular ``factor`` with ``factor factor' = m + shift I`` (``m`` symmetric
    positive definite; only its lower triangle is read)."""
    d = len(m)
    factor[:] = 0.0
    for j in range(d):
        pivot = m[j, j] + shift
        for k in range(j):
            pivot -= factor[j, k] * factor[j, k]
        factor[j, j] = np.sqrt(pivot)
        for i in range(j + 1, d):
            total = m[i, j]
            for k in range(j):
                total -= factor[i, k] * factor[j, k]
            factor[i, j] = total / factor[j, j]


@jit
def cholesky_solve(factor: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    """``out = (L L')^-1 b`` for the lower-triangular ``factor`` ``L``."""
    d = len(b)
    for i in range(d):  # L y = b
        total = b[i]
        for k in range(i):
            total -= factor[i, k] * out[k]
        out[i] = total / factor[i, i]
    for i in range(d - 1, -1, -1):  # L' out = y
        total = out[i]
        for k in range(i + 1, d):
            total -= factor[k, i] * out[k]
        out[i] = total / factor[i, i]
