"""Latent states from user factors: k-means, train/test cluster matching, Gaussian priors.

Both halves of the ratings have the same users, but their factorisations are only defined
up to an invertible transform of the latent space, so the clusters of ``U`` (test) and
``Û`` (train) are matched by who is in them, never by their coordinates: the assignment of
train clusters to test clusters that maximises the number of shared users (Hungarian
algorithm). State ``s`` is test cluster ``s``; its offline prior comes from the train
cluster matched to it.
"""

from __future__ import annotations

import numpy as np

N_INIT = 10  # k-means restarts; the best of them (lowest inertia) is kept


def kmeans(points: np.ndarray, k: int, seed: int) -> np.ndarray:
    """k-means labels ``(n,)`` of ``points (n, d)``, deterministic given ``seed``.

    Single-threaded: on a busy machine scikit-learn's OpenMP threads wait for each other.
    """
    from sklearn.cluster import KMeans  # imported here: scikit-learn takes ~2 s to import
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        return KMeans(n_clusters=k, n_init=N_INIT, random_state=seed).fit_predict(points)


def overlap(train_labels: np.ndarray, test_labels: np.ndarray, k: int) -> np.ndarray:
    """``(k, k)`` contingency table: users in train cluster ``a`` and test cluster ``b``."""
    table = np.zeros((k, k), dtype=np.int64)
    np.add.at(table, (train_labels, test_labels), 1)
    return table


def match(train_labels: np.ndarray, test_labels: np.ndarray, k: int) -> np.ndarray:
    """``train_of[s]``: the train cluster matched to test cluster ``s`` (maximum overlap)."""
    from scipy.optimize import linear_sum_assignment

    rows, cols = linear_sum_assignment(overlap(train_labels, test_labels, k), maximize=True)
    train_of = np.empty(k, dtype=np.int64)
    train_of[cols] = rows
    return train_of


def agreement(train_labels: np.ndarray, test_labels: np.ndarray, train_of: np.ndarray) -> float:
    """Fraction of users whose train cluster is the one matched to their test cluster."""
    return float(np.mean(train_of[test_labels] == train_labels))


def gaussian_priors(
    points: np.ndarray, labels: np.ndarray, order: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Mean ``(k, d)`` and covariance ``(k, d, d)`` of the points of clusters ``order[s]``.

    The covariance is the unbiased sample covariance (zero for a one-member cluster; the
    environment adds a ridge).
    """
    d = points.shape[1]
    means = np.empty((len(order), d))
    covariances = np.zeros((len(order), d, d))
    for s, cluster in enumerate(order):
        members = points[labels == cluster]
        means[s] = members.mean(axis=0)
        if len(members) > 1:
            covariances[s] = np.cov(members, rowvar=False)
    return means, covariances
