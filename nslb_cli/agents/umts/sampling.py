"""numba settings and small compiled helpers shared by umTS's kernels.

Kernels (functions called from Python) loop over the runs of a batch inside compiled
code. Run ``r`` draws only from its own generator ``generators[r]`` (a ``numba.typed.List``
of ``numpy.random.Generator``, ``nslb_cli.bandit.rng.BatchRNG.typed``) and sums only its own
numbers, in the order written (no ``fastmath``), so its results do not depend on the
other runs of the batch (docs/design.md §2).

Helpers are called once per run, never per particle or per draw, and particle loops index
whole arrays: passing an array or a generator costs reference counting that numba does not
always remove.
"""

from __future__ import annotations

import numpy as np

from nslb_cli.compiled.jit import jit


@jit
def standard_gammas(generator: np.random.Generator, shapes: np.ndarray) -> None:
    """Replace every entry of ``shapes`` (2-D) by a ``Gamma(shape, 1)`` draw, row by row:
    the numbers (and the stream) of ``generator.standard_gamma(shapes)``.

    numpy's algorithm, written out: ``shape = 1``: a standard exponential. ``shape > 1``:
    Marsaglia and Tsang (2000), ``d = shape - 1/3``, ``c = 1 / sqrt(9 d)``; draw
    ``x ~ N(0, 1)`` until ``v = (1 + c x)^3 > 0``, then ``u ~ U(0, 1)``, and accept ``d v``
    if ``u < 1 - 0.0331 x^4`` or ``log u < x^2 / 2 + d (1 - v + log v)``. ``shape < 1``
    goes to the library. One call per run, the loop inside.
    """
    rows, columns = shapes.shape
    for i in range(rows):
        for j in range(columns):
            shape = shapes[i, j]
            if shape == 1.0:
                shapes[i, j] = generator.standard_exponential()
                continue
            if shape < 1.0:
                shapes[i, j] = generator.standard_gamma(shape)
                continue
            d = shape - 1.0 / 3.0
            c = 1.0 / np.sqrt(9.0 * d)
            while True:
                x = generator.standard_normal()
                v = 1.0 + c * x
                if v <= 0.0:
                    continue
                v = v * v * v
                u = generator.random()
                x2 = x * x
                if u < 1.0 - 0.0331 * x2 * x2 or np.log(u) < 0.5 * x2 + d * (1.0 - v + np.log(v)):
                    shapes[i, j] = d * v
                    break


@jit
def draw_each(weights: np.ndarray, generator: np.random.Generator, out: np.ndarray) -> None:
    """``out[m] ~ weights[m] / sum(weights[m])`` for every row ``m``, one uniform ``u`` each:
    the first index whose cumulative weight exceeds ``u · sum(weights[m])`` (the rule of
    ``nslb_cli.bandit.rng.categorical``)."""
    M, S = weights.shape
    for m in range(M):
        u = generator.random()
        total = 0.0
        for s in range(S):
            total += weights[m, s]
        threshold = u * total
        cumulative = 0.0
        out[m] = S - 1
        for s in range(S):
            cumulative += weights[m, s]
            if cumulative > threshold:
                out[m] = s
                break


@jit
def normalise(log_weights: np.ndarray, r: int, out: np.ndarray) -> float:
    """``out[r] = exp(l - max l) / sum(exp(l - max l))`` for run ``r``'s log weights ``l =
    log_weights[r]`` (both ``(R, N)``); returns ``max l``."""
    top = -np.inf
    for i in range(log_weights.shape[1]):
        top = max(top, log_weights[r, i])
    total = 0.0
    for i in range(log_weights.shape[1]):
        out[r, i] = np.exp(log_weights[r, i] - top)
        total += out[r, i]
    for i in range(log_weights.shape[1]):
        out[r, i] /= total
    return top
