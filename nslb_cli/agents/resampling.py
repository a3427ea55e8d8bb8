"""Resampling schemes for particle filters (Douc & Cappé 2005 compare them).

Each maps normalised weights ``w`` (shape ``(N,)``) to ``N`` ancestor indices whose expected
counts are ``N · w``:

* ``multinomial``: ``N`` independent draws from ``w``;
* ``stratified``: one uniform in each stratum ``[(i, i + 1) / N)``;
* ``systematic``: one uniform ``u`` shared by all strata, positions ``(i + u) / N``.
"""

from __future__ import annotations

import numpy as np

SCHEMES = ("systematic", "stratified", "multinomial")


def resample(weights: np.ndarray, scheme: str, rng: np.random.Generator) -> np.ndarray:
    """Ancestor indices, shape ``(N,)``, for normalised ``weights`` under ``scheme``."""
    n = len(weights)
    if scheme == "systematic":
        positions = (np.arange(n) + rng.random()) / n
    elif scheme == "stratified":
        positions = (np.arange(n) + rng.random(n)) / n
    elif scheme == "multinomial":
        positions = np.sort(rng.random(n))
    else:
        raise ValueError(f"unknown resampling scheme '{scheme}'; use one of {', '.join(SCHEMES)}")
    cumulative = np.cumsum(weights)
    cumulative /= cumulative[-1]
    return np.minimum(np.searchsorted(cumulative, positions, side="right"), n - 1)
