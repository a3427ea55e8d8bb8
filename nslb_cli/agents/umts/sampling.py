"""numba settings and small compiled helpers shared by umTS's kernels.

Kernels (functions called from Python) loop over the runs of a batch inside compiled
code. Run ``r`` draws only from its own generator ``generators[r]`` (a ``numba.typed.List``
of ``numpy.random.Generator``, :meth:`nslb_cli.core.rng.BatchRNG.typed`) and sums only its own
numbers, in the order written (no ``fastmath``), so its results do not depend on the
other runs of the batch (docs/design.md §2).

* Compiled code is cached on disk (:mod:`nslb_cli.core.compiled`): the compile cost is paid
  once per version of the kernels.
* Passing an array to a compiled function (or taking a view of one) costs two atomic
  reference-count updates that numba does not always remove: helpers are called once per
  run, never per particle, and particle loops index whole arrays.
* Serial: ``parallel=True`` with ``prange`` over runs gave the same numbers but was slower
  on a shared two-core machine (each round's parallel regions wait for both cores).
"""

from __future__ import annotations

import numpy as np

from nslb_cli.core.compiled import inline, jit


@inline
def standard_gamma(generator: np.random.Generator, shape: float) -> float:
    """A ``Gamma(shape, 1)`` draw, the very number ``generator.standard_gamma(shape)`` gives.

    numpy's algorithm, written out so that numba inlines it into the caller's loop: the
    library call costs ~18 ns a draw against ~7 ns inlined, most of it the generator's
    reference counting on every call. ``shape = 1``: a standard exponential. ``shape > 1``:
    Marsaglia and Tsang (2000), ``d = shape - 1/3``, ``c = 1 / sqrt(9 d)``; draw
    ``x ~ N(0, 1)`` until ``v = (1 + c x)^3 > 0``, then ``u ~ U(0, 1)``, and accept ``d v``
    if ``u < 1 - 0.0331 x^4`` or ``log u < x^2 / 2 + d (1 - v + log v)``. ``shape < 1``
    (rare here: Dirichlet counts start at the prior's) goes to the library.
    """
    if shape == 1.0:
        return generator.standard_exponential()
    if shape < 1.0:
        return generator.standard_gamma(shape)
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
            return d * v


@jit
def draw_each(weights: np.ndarray, generator: np.random.Generator, out: np.ndarray) -> None:
    """``out[m] ~ weights[m] / sum(weights[m])`` for every row ``m``, one uniform ``u`` each:
    the first index whose cumulative weight exceeds ``u · sum(weights[m])`` (the rule of
    :func:`nslb_cli.core.rng.categorical`)."""
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
def normalise(log_weights: np.ndarray, out: np.ndarray) -> None:
    """``out = exp(l - max l) / sum(exp(l - max l))`` for one run's log weights."""
    top = log_weights.max()
    total = 0.0
    for i in range(len(log_weights)):
        out[i] = np.exp(log_weights[i] - top)
        total += out[i]
    for i in range(len(log_weights)):
        out[i] /= total
