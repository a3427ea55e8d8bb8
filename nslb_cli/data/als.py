"""Regularised low-rank matrix completion by alternating least squares (ALS).

Given observed ratings ``r_ij`` for ``(i, j)`` in ``Omega``, find ``U (n_users, d)`` and
``V (n_items, d)`` minimising:

    sum_{(i,j) in Omega} (r_ij - U_i · V_j)^2 + reg · (sum_i ||U_i||^2 + sum_j ||V_j||^2)

(the MAP estimate of probabilistic matrix factorisation, Salakhutdinov & Mnih 2008; no bias
terms, D8). Each half-step is exact: with ``V`` fixed, every ``U_i`` solves
``(V_Oi' V_Oi + reg I) U_i = V_Oi' r_i``, and symmetrically for ``V``. The Gram matrices of all
rows come from one float32 sparse product; users and items without ratings get zero factors.
A sweep that produces ``inf`` or ``NaN``, or a singular system, stops the fit with a one-line
``DataError``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import sparse

from nslb_cli.data import DataError
from nslb_cli.data.ratings import MAX_RATING

CHUNK = 1 << 20  # predictions are computed this many at a time (bounded memory)
BLOCK_BYTES = 4 << 20  # the Gram product reads outer products in blocks that stay in cache
FLOAT32_MAX = float(np.finfo(np.float32).max)  # 3.4e38: ALS' Grams and penalty are float32


@dataclass(frozen=True)
class Factors:
    """A fitted factorisation: ``U @ V.T`` approximates the ratings."""

    users: np.ndarray
    items: np.ndarray
    objective: np.ndarray  # the regularised objective after each iteration

    def predict(self, users: np.ndarray, items: np.ndarray) -> np.ndarray:
        """``U_i · V_j`` for each pair."""
        out = np.empty(len(users))
        for start in range(0, len(users), CHUNK):
            part = slice(start, start + CHUNK)
            out[part] = np.einsum("nd,nd->n", self.users[users[part]], self.items[items[part]])
        return out

    def squared_error(self, users: np.ndarray, items: np.ndarray, values: np.ndarray) -> float:
        """``sum (r_ij - U_i · V_j)^2`` over the given ratings."""
        return float(np.sum((self.predict(users, items) - values) ** 2))

    def rmse(self, users: np.ndarray, items: np.ndarray, values: np.ndarray) -> float:
        return float(np.sqrt(self.squared_error(users, items, values) / len(values)))


def als(
    users: np.ndarray,
    items: np.ndarray,
    values: np.ndarray,
    shape: tuple[int, int],
    rank: int,
    reg: float,
    iterations: int,
    rng: np.random.Generator,
) -> Factors:
    """Fit rank-``rank`` factors to the ratings ``values[k]`` at ``(users[k], items[k])``.

    ``V`` starts from ``N(0, 1/rank)`` entries drawn from ``rng``; each iteration solves for
    ``U`` then for ``V``.
    """
    if not (math.isfinite(reg) and 0 < reg <= FLOAT32_MAX):
        raise DataError(
            "env.als_reg", f"ALS needs a penalty in (0, {FLOAT32_MAX:.3g}] (float32), got {reg:g}"
        )
    values = np.asarray(values, dtype=np.float32)
    ratings = sparse.csr_matrix((values, (users, items)), shape=shape, dtype=np.float32)
    ratings_t = ratings.T.tocsr()
    item_factors = rng.normal(0.0, 1.0 / np.sqrt(rank), (shape[1], rank)).astype(np.float32)
    total = float(np.sum(values.astype(np.float64) ** 2))
    objective = np.empty(iterations)
    for step in range(iterations):
        # An overflow is detected below and reported in one line, not as numpy warnings.
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            try:
                user_factors = _ridge_rows(ratings, item_factors, reg)[0]
                item_factors, gram, rhs = _ridge_rows(ratings_t, user_factors, reg)
            except np.linalg.LinAlgError as err:
                raise DataError(
                    "env.als_reg",
                    f"ALS at penalty {reg:g} meets a singular system ({err}): raise it",
                ) from None
            penalty = reg * (_squares(user_factors) + _squares(item_factors))
            objective[step] = total + _fit(item_factors, gram, rhs) + penalty
        if not math.isfinite(objective[step]):
            raise _overflow(values, reg, step)
    fitted = Factors(user_factors.astype(np.float64), item_factors.astype(np.float64), objective)
    if not (np.isfinite(fitted.users).all() and np.isfinite(fitted.items).all()):
        raise _overflow(values, reg, iterations - 1)
    return fitted


def _overflow(values: np.ndarray, reg: float, step: int) -> DataError:
    """The error of a sweep that produced ``inf`` or ``NaN``, naming the setting to change:
    the data when a rating exceeds ``MAX_RATING`` (or is not finite), else the penalty (so
    small that an ill-conditioned system overflows)."""
    largest = float(np.max(np.abs(values))) if len(values) else 0.0
    where = f"ALS at penalty {reg:g} gave non-finite factors in sweep {step + 1}"
    if not largest <= MAX_RATING:
        return DataError(
            "env.data_dir",
            f"{where}: ratings as large as {largest:g} overflow its float32 arithmetic "
            f"(ratings must be at most {MAX_RATING:g} in magnitude)",
        )
    return DataError(
        "env.als_reg", f"{where} (ratings up to {largest:g} in magnitude): use a larger penalty"
    )


def _squares(factors: np.ndarray) -> float:
    return float(np.sum(factors.astype(np.float64) ** 2))


def _fit(x: np.ndarray, gram: np.ndarray, rhs: np.ndarray) -> float:
    """``sum_i (x_i' G_i x_i - 2 x_i · b_i)``: the squared error of the rows' fit minus
    ``sum r_ij^2`` (``G_i``, ``b_i`` as returned by ``_ridge_rows``)."""
    quadratic = np.einsum("nij,nj->ni", gram, x).astype(np.float64)
    x = x.astype(np.float64)
    return float(np.sum(x * quadratic) - 2.0 * np.sum(x * rhs.astype(np.float64)))


def _ridge_rows(
    ratings: sparse.csr_matrix, other: np.ndarray, reg: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For every row ``i``: ``x_i = argmin_x sum_j obs_ij (r_ij - x · other_j)^2 + reg ||x||^2``.

    Returns the solutions ``x (n, d)``, the Gram matrices ``G_i = sum_j obs_ij other_j
    other_j'`` ``(n, d, d)`` and the right-hand sides ``b_i = sum_j r_ij other_j`` ``(n, d)``.
    """
    rank = other.shape[1]
    upper = np.triu_indices(rank)
    pattern = sparse.csr_matrix(
        (np.ones_like(ratings.data), ratings.indices, ratings.indptr), shape=ratings.shape
    )
    outer = other[:, upper[0]] * other[:, upper[1]]
    width = max(1, BLOCK_BYTES // (outer.itemsize * len(other)))
    packed = np.empty((ratings.shape[0], outer.shape[1]), dtype=np.float32)
    for start in range(0, outer.shape[1], width):
        block = slice(start, start + width)
        packed[:, block] = pattern @ np.ascontiguousarray(outer[:, block])
    gram = np.empty((ratings.shape[0], rank, rank), dtype=np.float32)
    gram[:, upper[0], upper[1]] = packed
    gram[:, upper[1], upper[0]] = packed
    rhs = np.asarray(ratings @ other)
    ridge = gram + np.float32(reg) * np.eye(rank, dtype=np.float32)
    return np.linalg.solve(ridge, rhs[:, :, None])[:, :, 0], gram, rhs
