"""From a MovieLens release to what ``env=movielens`` needs (SPEC §3.2, steps 2–6).

1. **Filter** in one simultaneous pass: keep the ratings of users with at least
   ``min_user_ratings`` ratings and of movies with at least ``min_item_ratings`` ratings,
   both counted in the whole release. Not iterated: after the pass a kept user may have
   fewer than ``min_user_ratings`` ratings of *kept* movies (on ML-100K at 100/100 the
   fewest is 43). Iterating to a fixed point (a k-core) empties ML-100K at 100/100 in five
   passes, and the one-pass reading is the paper's ("users who rated at least 200 movies
   and movies rated by at least 200 users"); the diagnostics report the fewest kept
   ratings of a user and of a movie.
2. **Split** the kept ratings 50/50 uniformly at random (``floor(N/2)`` train).
3. **Factorise** each half with rank-``rank`` ALS (:mod:`~nslb_cli.data.als`) on the same
   users × movies index: train gives ``Û, V̂``, test gives ``U, V``.
4. **Cluster** ``U`` and ``Û`` with k-means (``k = n_states``), match the train clusters to
   the test clusters by overlap (:mod:`~nslb_cli.data.clusters`).
5. **Priors**: mean and sample covariance of ``Û`` over the train cluster of each state
   (the environment adds ``prior_ridge``).

All randomness comes from ``data_seed`` (independent streams for the split, each ALS start
and each k-means). The result is cached in ``<cache>/prepared/`` under a hash of the
source's contents and every setting above, so a second run with the same settings loads it
in milliseconds and any change of setting or data builds a new one.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from nslb_cli.data import DataError, cache
from nslb_cli.data.als import als
from nslb_cli.data.clusters import agreement, gaussian_priors, kmeans, match
from nslb_cli.data.ratings import Ratings, detect, read_release

log = logging.getLogger("nslb")

# Bump when a change of code changes the prepared arrays: old cache files are then ignored.
VERSION = 1


class Purpose:
    """Independent random streams of the data preparation, derived from ``data_seed``."""

    SPLIT = 0
    ALS_TRAIN = 1
    ALS_TEST = 2
    KMEANS_TEST = 3
    KMEANS_TRAIN = 4


@dataclass(frozen=True)
class Settings:
    """Every setting that changes the prepared arrays (and so the cache key); the defaults
    live in one place, ``MovieLensParams`` (``env=movielens``)."""

    min_user_ratings: int
    min_item_ratings: int
    rank: int
    als_reg: float
    als_iterations: int
    n_states: int
    data_seed: int


@dataclass(frozen=True)
class Prepared:
    """The factorised, clustered data; users and movies are indexed ``0..n-1``.

    Attributes:
        user_ids, movie_ids: raw ids of the kept users and movies.
        test_users, test_items: ``U (n_users, d)``, ``V (n_movies, d)`` from the test half.
        train_users, train_items: ``Û``, ``V̂`` from the train half.
        test_labels, train_labels: k-means cluster of every user in ``U`` and ``Û``.
        train_of: ``(S,)`` the train cluster matched to test cluster (= state) ``s``.
        prior_means, prior_covariances: ``(S, d)``, ``(S, d, d)`` of ``Û`` over the train
            cluster of each state (no ridge).
        genres: ``(n_movies, G)`` genre flags of the kept movies; ``genre_names``.
        diagnostics: sizes, RMSEs, cluster sizes and agreement (JSON-serialisable).
    """

    user_ids: np.ndarray
    movie_ids: np.ndarray
    test_users: np.ndarray
    test_items: np.ndarray
    train_users: np.ndarray
    train_items: np.ndarray
    test_labels: np.ndarray
    train_labels: np.ndarray
    train_of: np.ndarray
    prior_means: np.ndarray
    prior_covariances: np.ndarray
    genres: np.ndarray
    genre_names: tuple[str, ...]
    diagnostics: dict[str, Any] = field(default_factory=dict)

    ARRAYS = (
        "user_ids",
        "movie_ids",
        "test_users",
        "test_items",
        "train_users",
        "train_items",
        "test_labels",
        "train_labels",
        "train_of",
        "prior_means",
        "prior_covariances",
        "genres",
    )

    def to_arrays(self) -> dict[str, np.ndarray]:
        arrays = {name: getattr(self, name) for name in self.ARRAYS}
        arrays["genre_names"] = np.array(self.genre_names, dtype=str)
        arrays["diagnostics"] = np.array(_json(self.diagnostics))
        return arrays

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray]) -> Prepared:
        return cls(
            **{name: arrays[name] for name in cls.ARRAYS},
            genre_names=tuple(str(g) for g in arrays["genre_names"]),
            diagnostics=json.loads(str(arrays["diagnostics"])),
        )

    @classmethod
    def fields(cls) -> tuple[str, ...]:
        return (*cls.ARRAYS, "genre_names", "diagnostics")


def _json(value: dict[str, Any]) -> str:
    return json.dumps(value, sort_keys=True)


def stream(data_seed: int, purpose: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence(int(data_seed), spawn_key=(purpose,)))


def filter_ratings(
    users: np.ndarray, items: np.ndarray, min_user: int, min_item: int
) -> np.ndarray:
    """Mask of the ratings by users with >= ``min_user`` and of movies with >= ``min_item``
    ratings, both counted in the whole release (one simultaneous pass)."""
    _, user_index, user_count = np.unique(users, return_inverse=True, return_counts=True)
    _, item_index, item_count = np.unique(items, return_inverse=True, return_counts=True)
    return (user_count[user_index] >= min_user) & (item_count[item_index] >= min_item)


def split(n: int, rng: np.random.Generator) -> np.ndarray:
    """Boolean mask of the ``floor(n/2)`` ratings in the train half, uniformly at random."""
    train = np.zeros(n, dtype=bool)
    train[rng.permutation(n)[: n // 2]] = True
    return train


def prepare(ratings: Ratings, settings: Settings) -> Prepared:
    """Run steps 1–5 of the module docstring on parsed ratings."""
    start = time.perf_counter()
    s = settings
    keep = filter_ratings(ratings.users, ratings.items, s.min_user_ratings, s.min_item_ratings)
    if not keep.any():
        raise DataError(
            "env.min_user_ratings",
            f"no ratings left after keeping users with >= {s.min_user_ratings} and movies "
            f"with >= {s.min_item_ratings} ratings; lower the thresholds",
        )
    user_ids, users = np.unique(ratings.users[keep], return_inverse=True)
    movie_ids, items = np.unique(ratings.items[keep], return_inverse=True)
    values = ratings.values[keep]
    if len(user_ids) < s.n_states:
        raise DataError(
            "env.n_states",
            f"only {len(user_ids)} users left after filtering, fewer than {s.n_states} states",
        )
    pairs = users.astype(np.int64) * len(movie_ids) + items
    if len(np.unique(pairs)) < len(pairs):
        raise DataError("env.data_dir", "a user rated the same movie more than once")
    train = split(len(values), stream(s.data_seed, Purpose.SPLIT))
    shape = (len(user_ids), len(movie_ids))
    halves = {}
    for name, mask, purpose in (
        ("train", train, Purpose.ALS_TRAIN),
        ("test", ~train, Purpose.ALS_TEST),
    ):
        rng = stream(s.data_seed, purpose)
        halves[name] = als(
            users[mask], items[mask], values[mask], shape, s.rank, s.als_reg, s.als_iterations, rng
        )
    test_seed = int(stream(s.data_seed, Purpose.KMEANS_TEST).integers(2**31 - 1))
    train_seed = int(stream(s.data_seed, Purpose.KMEANS_TRAIN).integers(2**31 - 1))
    test_labels = kmeans(halves["test"].users, s.n_states, test_seed)
    train_labels = kmeans(halves["train"].users, s.n_states, train_seed)
    train_of = match(train_labels, test_labels, s.n_states)
    prior_means, prior_covariances = gaussian_priors(halves["train"].users, train_labels, train_of)
    genres = ratings.genres_of(movie_ids)

    def rmse(half: str, on: np.ndarray) -> float:
        return round(halves[half].rmse(users[on], items[on], values[on]), 4)

    diagnostics = {
        "raw": {
            "ratings": len(ratings.values),
            "users": len(np.unique(ratings.users)),
            "movies": len(np.unique(ratings.items)),
        },
        "filtered": {
            "ratings": len(values),
            "users": shape[0],
            "movies": shape[1],
            "fewest_ratings_of_a_user": int(np.bincount(users).min()),
            "fewest_ratings_of_a_movie": int(np.bincount(items).min()),
        },
        "split": {"train": int(train.sum()), "test": int((~train).sum())},
        "genres": {n: int(c) for n, c in zip(ratings.genre_names, genres.sum(axis=0), strict=True)},
        "movies_without_genre": int((~genres.any(axis=1)).sum()),
        "rmse": {
            "train_factors_on_train": rmse("train", train),
            "train_factors_on_test": rmse("train", ~train),
            "test_factors_on_test": rmse("test", ~train),
            "test_factors_on_train": rmse("test", train),
            "mean_rating_baseline_on_test": round(
                float(np.sqrt(np.mean((values[~train] - values[train].mean()) ** 2))), 4
            ),
        },
        "als_objective_decrease": {
            half: [round(float(f.objective[0]), 2), round(float(f.objective[-1]), 2)]
            for half, f in halves.items()
        },
        "clusters": {
            "test_sizes": np.bincount(test_labels, minlength=s.n_states).tolist(),
            "train_sizes": np.bincount(train_labels, minlength=s.n_states)[train_of].tolist(),
            "agreement": round(agreement(train_labels, test_labels, train_of), 4),
        },
        "mean_norm": {
            "test_users": round(float(np.linalg.norm(halves["test"].users, axis=1).mean()), 4),
            "train_users": round(float(np.linalg.norm(halves["train"].users, axis=1).mean()), 4),
        },
        "build_seconds": round(time.perf_counter() - start, 2),
    }
    return Prepared(
        user_ids=user_ids,
        movie_ids=movie_ids,
        test_users=halves["test"].users,
        test_items=halves["test"].items,
        train_users=halves["train"].users,
        train_items=halves["train"].items,
        test_labels=test_labels,
        train_labels=train_labels,
        train_of=train_of,
        prior_means=prior_means,
        prior_covariances=prior_covariances,
        genres=genres,
        genre_names=ratings.genre_names,
        diagnostics=diagnostics,
    )


@dataclass(frozen=True)
class Loaded:
    """Prepared data with where it came from."""

    data: Prepared
    path: Path
    hit: bool
    seconds: float
    source: Path


def cache_path(root: Path, key: str) -> Path:
    return root / "prepared" / f"movielens-{key}.npz"


def load_or_prepare(folder: Path, settings: Settings, root: Path) -> Loaded:
    """The prepared data of the release in ``folder``: from the cache, or built and cached."""
    start = time.perf_counter()
    layout = detect(folder)
    identity = {"format": layout.format, "sha256": cache.file_digest(layout.files)}
    key = cache.digest({"version": VERSION, "source": identity, "settings": asdict(settings)})
    path = cache_path(root, key)
    stored = cache.load(path, key, Prepared.fields())
    if stored is not None:
        data = Prepared.from_arrays(stored)
        return Loaded(data, path, True, time.perf_counter() - start, Path(folder))
    log.info("preparing MovieLens data from %s (cached afterwards in %s)", folder, path)
    data = prepare(read_release(folder, layout), settings)
    data.diagnostics["source"] = {"folder": str(folder), **identity}
    data.diagnostics["settings"] = asdict(settings)
    cache.save(path, key, data.to_arrays())
    return Loaded(data, path, False, time.perf_counter() - start, Path(folder))
