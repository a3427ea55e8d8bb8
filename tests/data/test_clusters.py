"""Cluster matching and Gaussian priors (nslb_cli.data.clusters)."""

from __future__ import annotations

import numpy as np
import pytest

from nslb_cli.data.clusters import agreement, gaussian_priors, match, overlap


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
