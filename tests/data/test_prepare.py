"""Data preparation: filter, split, ALS, cluster matching, priors, and the prepared cache."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from nslb_cli.data import DataError
from nslb_cli.data.als import als
from nslb_cli.data.clusters import agreement, gaussian_priors, match, overlap
from nslb_cli.data.prepare import filter_ratings, load_or_prepare, prepare, split
from nslb_cli.data.ratings import read_release
from tests.movielens_data import ML_100K, TINY, needs_ml_100k, tiny_release, write_csv, write_ml1m


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


def test_matching_recovers_a_known_relabelling() -> None:
    """Test clusters are train clusters relabelled by a permutation, with some users moved."""
    rng = np.random.default_rng(3)
    train = rng.integers(0, 4, 400)
    permutation = np.array([2, 0, 3, 1])  # train cluster a is test cluster permutation[a]
    test = permutation[train]
    moved = rng.random(400) < 0.2
    test[moved] = rng.integers(0, 4, moved.sum())
    train_of = match(train, test, 4)
    np.testing.assert_array_equal(train_of[permutation], np.arange(4))
    table = overlap(train, test, 4)
    assert table.sum() == 400 and table[1, 0] == np.sum((train == 1) & (test == 0))
    assert agreement(train, test, train_of) == pytest.approx(np.mean(permutation[train] == test))


def test_matching_maximises_total_overlap_not_greedy_choice() -> None:
    # Greedy (largest cell first) would pair 0->0 (10) and 1->1 (1); the optimum is 9 + 9.
    train = np.repeat([0, 0, 1, 1], [10, 9, 9, 1])
    test = np.repeat([0, 1, 0, 1], [10, 9, 9, 1])
    assert match(train, test, 2).tolist() == [1, 0]


def test_gaussian_priors_are_cluster_moments_in_state_order() -> None:
    rng = np.random.default_rng(0)
    points, labels = rng.normal(0, 1, (90, 4)), np.repeat([0, 1, 2], 30)
    means, covariances = gaussian_priors(points, labels, np.array([2, 0, 1]))
    np.testing.assert_allclose(means[0], points[60:].mean(axis=0))
    np.testing.assert_allclose(covariances[1], np.cov(points[:30].T))
    single, zero = gaussian_priors(points[:1], np.array([0]), np.array([0]))
    assert np.all(zero == 0) and np.allclose(single, points[:1])


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


def test_prepare_refuses_an_empty_filter(tmp_path: Path) -> None:
    ratings = read_release(write_csv(tiny_release(), tmp_path))
    with pytest.raises(DataError, match="no ratings left"):
        prepare(ratings, replace(TINY, min_user_ratings=10_000))


@needs_ml_100k
def test_ml100k_filter_100_100() -> None:
    ratings = read_release(ML_100K)
    keep = filter_ratings(ratings.users, ratings.items, 100, 100)
    assert keep.sum() == 45926
    assert len(np.unique(ratings.users[keep])) == 364 and len(np.unique(ratings.items[keep])) == 338


# --- the cache -------------------------------------------------------------------------


@pytest.fixture
def release(tmp_path: Path) -> Path:
    return write_ml1m(tiny_release(), tmp_path / "release")


def test_cache_hit_and_miss_by_settings(release: Path, tmp_path: Path) -> None:
    root = tmp_path / "cache"
    first = load_or_prepare(release, TINY, root)
    assert not first.hit and first.path.is_file() and first.path.parent == root / "prepared"
    second = load_or_prepare(release, TINY, root)
    assert second.hit and second.path == first.path
    np.testing.assert_array_equal(second.data.test_users, first.data.test_users)
    assert second.data.genre_names == first.data.genre_names
    assert second.data.diagnostics == first.data.diagnostics
    for change in ({"als_iterations": 16}, {"data_seed": 3}, {"min_item_ratings": 29}):
        other = load_or_prepare(release, replace(TINY, **change), root)
        assert not other.hit and other.path != first.path, change
    assert len(list((root / "prepared").glob("*.npz"))) == 4
    assert not list((root / "prepared").glob(".*")), "no temporary files left behind"


def test_cache_key_follows_the_contents_not_the_path(release: Path, tmp_path: Path) -> None:
    root = tmp_path / "cache"
    first = load_or_prepare(release, TINY, root)
    copy = shutil.copytree(release, tmp_path / "copy")
    assert load_or_prepare(copy, TINY, root).path == first.path
    with open(copy / "ratings.dat", "a") as handle:
        handle.write("9999::4::5::978300000\n")
    changed = load_or_prepare(copy, TINY, root)
    assert not changed.hit and changed.path != first.path


@pytest.mark.parametrize(
    "damage",
    [
        lambda p: p.write_bytes(b"not a zip file"),
        lambda p: p.write_bytes(p.read_bytes()[: len(p.read_bytes()) // 2]),
        lambda p: p.write_bytes(b""),
    ],
    ids=["garbage", "truncated", "empty"],
)
def test_a_corrupt_cache_file_is_rebuilt(damage, release: Path, tmp_path: Path) -> None:
    root = tmp_path / "cache"
    first = load_or_prepare(release, TINY, root)
    damage(first.path)
    rebuilt = load_or_prepare(release, TINY, root)
    assert not rebuilt.hit and rebuilt.path == first.path
    np.testing.assert_array_equal(rebuilt.data.train_items, first.data.train_items)
    assert load_or_prepare(release, TINY, root).hit


def test_a_cache_file_of_other_settings_under_this_name_is_rebuilt(
    release: Path, tmp_path: Path
) -> None:
    root = tmp_path / "cache"
    first = load_or_prepare(release, TINY, root)
    other = load_or_prepare(release, replace(TINY, data_seed=9), root)
    shutil.copy(other.path, first.path)
    rebuilt = load_or_prepare(release, TINY, root)
    assert not rebuilt.hit
    np.testing.assert_array_equal(rebuilt.data.test_users, first.data.test_users)
