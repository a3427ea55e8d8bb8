"""Regularised low-rank matrix completion by alternating least squares (ALS).

Given observed ratings ``r_ij`` for ``(i, j)`` in ``Omega``, find ``U (n_users, d)`` and
``V (n_items, d)`` minimising::

    sum_{(i,j) in Omega} (r_ij - U_i · V_j)^2 + reg · (sum_i ||U_i||^2 + sum_j ||V_j||^2)

(the MAP estimate of probabilistic matrix factorisation, Salakhutdinov & Mnih 2008, the
paper's reference). No bias terms: ``U · V`` itself approximates the ratings, so rewards
``U_i · V_j`` are on the rating scale. Each half-step is exact: with ``V`` fixed, every
``U_i`` is a ridge regression on the items user ``i`` rated,
``(V_Oi' V_Oi + reg I) U_i = V_Oi' r_i``, and symmetrically for ``V``; so the objective never
increases. The Gram matrices ``V_Oi' V_Oi`` of all users come from one sparse product.

Users and items without ratings get zero factors.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse


@dataclass(frozen=True)
class Factors:
    """A fitted factorisation: ``U @ V.T`` approximates the ratings."""

    users: np.ndarray
    items: np.ndarray
    objective: np.ndarray  # the regularised objective after each iteration

    def predict(self, users: np.ndarray, items: np.ndarray) -> np.ndarray:
        """``U_i · V_j`` for each pair."""
        return np.einsum("nd,nd->n", self.users[users], self.items[items])

    def rmse(self, users: np.ndarray, items: np.ndarray, values: np.ndarray) -> float:
        return float(np.sqrt(np.mean((self.predict(users, items) - values) ** 2)))


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
    n_users, n_items = shape
    ratings = sparse.csr_matrix((values, (users, items)), shape=shape)
    observed = sparse.csr_matrix((np.ones_like(values), (users, items)), shape=shape)
    ratings_t, observed_t = ratings.T.tocsr(), observed.T.tocsr()
    item_factors = rng.normal(0.0, 1.0 / np.sqrt(rank), (n_items, rank))
    user_factors = np.zeros((n_users, rank))
    objective = np.empty(iterations)
    for step in range(iterations):
        user_factors = _ridge_rows(observed, ratings, item_factors, reg)
        item_factors = _ridge_rows(observed_t, ratings_t, user_factors, reg)
        residual = values - np.einsum("nd,nd->n", user_factors[users], item_factors[items])
        penalty = reg * (np.sum(user_factors**2) + np.sum(item_factors**2))
        objective[step] = np.sum(residual**2) + penalty
    return Factors(user_factors, item_factors, objective)


def _ridge_rows(
    observed: sparse.csr_matrix, ratings: sparse.csr_matrix, other: np.ndarray, reg: float
) -> np.ndarray:
    """For every row ``i``: ``argmin_x sum_j obs_ij (r_ij - x · other_j)^2 + reg ||x||^2``."""
    rank = other.shape[1]
    outer = (other[:, :, None] * other[:, None, :]).reshape(len(other), rank * rank)
    gram = np.asarray(observed @ outer).reshape(-1, rank, rank) + reg * np.eye(rank)
    rhs = np.asarray(ratings @ other)
    return np.linalg.solve(gram, rhs[:, :, None])[:, :, 0]
