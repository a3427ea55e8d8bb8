"""numba settings and small compiled helpers shared by umTS's kernels.

Kernels (functions called from Python) loop over the runs of a batch inside compiled
code. Run ``r`` draws only from its own generator ``generators[r]`` (a ``numba.typed.List``
of ``numpy.random.Generator``, :meth:`nslb_cli.bandit.rng.BatchRNG.typed`) and sums only its own
numbers, in the order written (no ``fastmath``), so its results do not depend on the
other runs of the batch (docs/design.md §2).

* Compiled code is cached on disk (:mod:`nslb_cli.compiled.jit`): the compile cost is paid
  once per version of the kernels.
* Passing an array or a generator to a compiled function (or taking a view of an array)
  costs two atomic reference-count updates that numba does not always remove: helpers are
  called once per run, never per particle or per draw, and particle loops index whole
  arrays. That holds for helpers inlined by numba (``inline="always"``) too: the inlined
  body gets its own copy of each argument, and numba's pruning of reference counts does
  not remove the pair around a body with a loop (:func:`standard_gammas`).
* Serial: ``parallel=True`` with ``prange`` over runs gave the same numbers but was slower
  on a shared two-core machine (each round's parallel regions wait for both cores). Several
  cores are used by playing parts of a batch in threads instead (:mod:`nslb_cli.runner.parts`).
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
    (rare here: Dirichlet counts start at the prior's) goes to the library. The library call
    per draw costs ~18 ns against ~7 ns written out, most of it the generator's reference
    counting; a helper inlined per draw still copies the generator, an atomic increment and
    decrement of its reference count around the rejection loop that numba does not prune:
    in umTS's update (``N · S`` gammas per run and round) those were 92 % of the reference
    counting, a fifth of the time with learnt transitions (gdb on the return addresses of
    ``NRT_incref`` and ``NRT_decref``). Hence one call per run, the loop inside.
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
    :func:`nslb_cli.bandit.rng.categorical`)."""
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
    log_weights[r]`` (both ``(R, N)``); returns ``max l``. Whole arrays and the run's index
    rather than rows for ``out`` (a view costs reference counting); ``max l`` is returned so
    that the caller need not take it again."""
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
