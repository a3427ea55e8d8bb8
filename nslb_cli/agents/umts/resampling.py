"""Resampling schemes for particle filters (Douc & Cappé 2005 compare them).

Each maps normalised weights ``w`` (shape ``(N,)``) to ``N`` ancestor indices whose expected
counts are ``N · w``. The scheme chooses positions ``u_1 <= … <= u_N`` in ``[0, 1)``, and
position ``u`` selects the first particle ``j`` with ``w_1 + … + w_j > u``:

* ``multinomial``: ``N`` independent uniforms, sorted;
* ``stratified``: one uniform in each stratum ``[(i, i + 1) / N)``;
* ``systematic``: one uniform ``u`` shared by all strata, positions ``(i + u) / N``.

The ancestors are then arranged for copying in place: every particle with offspring is its
own first offspring (``a[j] = j``) and the extra copies fill, in order, the slots of the
particles without offspring. A slot that is copied into is therefore never a source, and
particles that survive once are not copied at all.
"""

from __future__ import annotations

import numpy as np

from nslb_cli.compiled.jit import jit

SCHEMES = ("systematic", "stratified", "multinomial")


@jit
def _positions(n: int, scheme: int, generator: np.random.Generator) -> np.ndarray:
    """The sorted positions of scheme ``SCHEMES[scheme]``, drawn from ``generator``."""
    positions = np.empty(n)
    shared = generator.random() if scheme == 0 else 0.0
    for i in range(n):
        if scheme == 2:
            positions[i] = generator.random()
        else:
            positions[i] = (i + (shared if scheme == 0 else generator.random())) / n
    if scheme == 2:
        positions.sort()
    return positions


@jit
def _first_above(ascending: np.ndarray, u: float) -> int:
    """The first index ``j`` with ``ascending[j] > u`` (``len`` if none), by bisection: numpy's
    ``searchsorted(side="right")``. Written out, as are the sums and maxima of umTS's kernels:
    numba's numpy functions load all of ``scipy.linalg`` (0.1 s) in every process that runs
    umTS, for kernels that call no BLAS."""
    low, high = 0, len(ascending)
    while low < high:
        middle = (low + high) // 2
        if ascending[middle] <= u:
            low = middle + 1
        else:
            high = middle
    return low


@jit
def draw_ancestors(
    weights: np.ndarray, scheme: int, generator: np.random.Generator, out: np.ndarray
) -> None:
    """Write into ``out`` the ancestors of scheme ``SCHEMES[scheme]``, arranged in place."""
    n = len(weights)
    cumulative = np.empty(n)
    total = 0.0
    for j in range(n):
        total += weights[j]
        cumulative[j] = total
    cumulative /= total
    offspring = np.zeros(n, dtype=np.int64)
    for u in _positions(n, scheme, generator):
        offspring[min(_first_above(cumulative, u), n - 1)] += 1
    free = 0  # the next slot of a particle without offspring
    for j in range(n):
        if offspring[j] > 0:
            out[j] = j
    for j in range(n):
        for _ in range(offspring[j] - 1):
            while offspring[free] > 0:
                free += 1
            out[free] = j
            free += 1
