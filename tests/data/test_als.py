"""Alternating least squares (nslb_cli.data.als): the objective, held-out entries, empty rows."""

from __future__ import annotations

import numpy as np

from nslb_cli.data.als import als


def low_rank_problem(seed: int = 0):
    rng = np.random.default_rng(seed)
    users, items, rank = 80, 60, 3
    truth = rng.normal(0, 1, (users, rank)) @ rng.normal(0, 1, (items, rank)).T
    observed = rng.random((users, items)) < 0.5
    u, i = np.nonzero(observed)
    hidden_u, hidden_i = np.nonzero(~observed)
    return truth, (u, i), (hidden_u, hidden_i), (users, items), rank


def test_als_objective_never_increases_and_train_error_falls() -> None:
    truth, (u, i), _, shape, rank = low_rank_problem()
    values = truth[u, i] + np.random.default_rng(5).normal(0, 0.3, len(u))
    one = als(u, i, values, shape, rank, 0.5, 1, np.random.default_rng(2))
    many = als(u, i, values, shape, rank, 0.5, 25, np.random.default_rng(2))
    assert np.all(np.diff(many.objective) <= 1e-9 * many.objective[:-1])
    assert many.rmse(u, i, values) < 0.5 * one.rmse(u, i, values)


def test_als_recovers_held_out_entries_of_a_low_rank_matrix() -> None:
    """Independent check: entries never shown to ALS are predicted to within 5% of their SD."""
    truth, (u, i), (hu, hi), shape, rank = low_rank_problem()
    fit = als(u, i, truth[u, i], shape, rank, 1e-3, 200, np.random.default_rng(0))
    predicted = np.einsum("nd,nd->n", fit.users[hu], fit.items[hi])
    rmse = np.sqrt(np.mean((predicted - truth[hu, hi]) ** 2))
    assert rmse < 0.05 * truth.std(), rmse


def test_als_gives_zero_factors_to_rows_without_ratings() -> None:
    rng = np.random.default_rng(0)
    fit = als(np.array([0, 0]), np.array([0, 1]), np.array([4.0, 2.0]), (3, 3), 2, 1.0, 5, rng)
    assert np.all(fit.users[1:] == 0) and np.all(fit.items[2] == 0)
