"""Data preparation: filter, split, the whole pipeline on a tiny release (its parts:
test_als.py, test_clusters.py; the prepared cache: test_prepared_cache.py)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from nslb_cli.data import DataError
from nslb_cli.data.prepare import encode, frequent, prepare, split
from nslb_cli.data.ratings import read_release
from tests.helpers.movielens import TINY, needs_ml_100k, tiny_release, write_csv
from tests.helpers.paths import ML_100K


def filter_ratings(
    users: np.ndarray, items: np.ndarray, min_user: int, min_item: int
) -> np.ndarray:
    """Mask of the ratings by users with >= ``min_user`` and of movies with >= ``min_item``
    ratings, both counted in the whole release (one simultaneous pass, as prepare's filter)."""
    return frequent(encode(users)[1], min_user) & frequent(encode(items)[1], min_item)


def test_filter_keeps_exactly_the_ratings_of_frequent_users_and_movies() -> None:
    rng = np.random.default_rng(1)
    users, items = rng.integers(0, 50, 3000), rng.integers(0, 80, 3000) ** 2  # skewed counts
    keep = filter_ratings(users, items, 60, 40)
    user_count = {u: np.sum(users == u) for u in np.unique(users)}
    item_count = {i: np.sum(items == i) for i in np.unique(items)}
    expected = np.array(
        [user_count[u] >= 60 and item_count[i] >= 40 for u, i in zip(users, items, strict=True)]
    )
    np.testing.assert_array_equal(keep, expected)
    assert 0 < keep.sum() < len(keep)


def test_split_is_a_random_half_partition() -> None:
    train = split(1001, np.random.default_rng(0))
    assert train.dtype == bool and train.sum() == 500 and (~train).sum() == 501
    again = split(1001, np.random.default_rng(0))
    np.testing.assert_array_equal(train, again)
    assert not np.array_equal(train, split(1001, np.random.default_rng(1)))
    assert 0.4 < train[:500].mean() < 0.6, "not a block split"


def test_prepare_tiny_release(tmp_path: Path) -> None:
    ratings = read_release(write_csv(tiny_release(), tmp_path))
    data = prepare(ratings, TINY)
    d = data.diagnostics
    assert d["filtered"]["users"] == len(data.user_ids) == len(data.test_users)
    assert data.test_users.shape == data.train_users.shape == (len(data.user_ids), 3)
    assert data.test_items.shape == data.train_items.shape == (len(data.movie_ids), 3)
    assert d["split"]["train"] + d["split"]["test"] == d["filtered"]["ratings"]
    assert sorted(data.train_of.tolist()) == [0, 1, 2]
    assert (
        sum(d["clusters"]["test_sizes"]) == sum(d["clusters"]["train_sizes"]) == len(data.user_ids)
    )
    assert d["rmse"]["train_factors_on_train"] < d["rmse"]["train_factors_on_test"]
    assert d["clusters"]["agreement"] > 0.9, "three well separated taste groups"
    again = prepare(ratings, TINY)
    np.testing.assert_array_equal(data.test_users, again.test_users)  # deterministic
    other = prepare(ratings, replace(TINY, data_seed=1))
    assert not np.array_equal(data.test_users, other.test_users)


def test_prepare_refuses_an_empty_filter_naming_the_threshold(tmp_path: Path) -> None:
    """Naming the threshold that empties it, or both when each does."""
    ratings = read_release(write_csv(tiny_release(), tmp_path))
    cases = [
        ({"min_user_ratings": 10_000}, "env.min_user_ratings"),
        ({"min_item_ratings": 10_000}, "env.min_item_ratings"),
        (
            {"min_user_ratings": 10_000, "min_item_ratings": 10_000},
            "env.min_user_ratings, env.min_item_ratings",
        ),
    ]
    for thresholds, key in cases:
        with pytest.raises(DataError, match="no ratings left") as refused:
            prepare(ratings, replace(TINY, **thresholds))
        assert str(refused.value).startswith(f"{key}: no ratings left")


@needs_ml_100k
def test_ml100k_filter_100_100() -> None:
    ratings = read_release(ML_100K)
    keep = filter_ratings(ratings.users, ratings.items, 100, 100)
    assert keep.sum() == 45926
    assert len(np.unique(ratings.users[keep])) == 364 and len(np.unique(ratings.items[keep])) == 338
