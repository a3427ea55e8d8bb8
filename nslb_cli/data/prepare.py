"""From a MovieLens release to what ``env=movielens`` needs (docs/design.md §3.2, steps 2–6).

1. **Filter** in one pass: users and movies with enough ratings in the whole release (D7).
2. **Split** the kept ratings 50/50 uniformly at random (``floor(N/2)`` train).
3. **Penalty** (``als_reg: auto``, ``choose_penalty``): hill-climb ``GRID`` by held-out
   RMSE of both halves (D8), halves beyond ``SEARCH_RATINGS`` searched on a subset of users.
4. **Factorise** each half with rank-``rank`` ALS: train gives ``Û, V̂``, test gives ``U, V``.
5. **Cluster** ``U`` and ``Û`` with k-means, match train to test clusters by overlap.
6. **Priors**: mean and sample covariance of ``Û`` over the train cluster of each state.

The result is cached under a hash of the source's contents and every setting.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from nslb_cli.data import DataError, prepared_cache
from nslb_cli.data.als import Factors, als
from nslb_cli.data.clusters import agreement, gaussian_priors, kmeans, match
from nslb_cli.data.ratings import Layout, Ratings, detect, read_release

log = logging.getLogger("nslb")

# Bump when a change of code changes the prepared arrays: old cache files are then ignored.
VERSION = 2

AUTO = "auto"
GRID = tuple(10.0 * 2.0**k for k in range(-6, 11))  # the penalties ``auto`` chooses from
VALIDATION_SHARE = 0.1  # share of each half held out to score a penalty
SEARCH_RATINGS = 500_000  # a larger half is searched on a subset of its users


class Purpose:
    """Independent random streams of the data preparation, derived from ``data_seed``."""

    SPLIT = 0
    ALS_TRAIN = 1
    ALS_TEST = 2
    KMEANS_TEST = 3
    KMEANS_TRAIN = 4
    HOLD_OUT_TRAIN = 5  # the held-out part (and the users searched) of each half
    HOLD_OUT_TEST = 6
    SEARCH_ALS_TRAIN = 7  # the ALS starts of the search's fits
    SEARCH_ALS_TEST = 8


@dataclass(frozen=True)
class Settings:
    """Every setting that changes the prepared arrays (and so the cache key); defaults in
    ``MovieLensParams``. ``als_reg`` is a penalty or ``"auto"``."""

    min_user_ratings: int
    min_item_ratings: int
    rank: int
    als_reg: float | str
    als_iterations: int
    n_states: int
    data_seed: int

    def key(self) -> dict[str, Any]:
        """The settings as they enter the cache key (with the search's constants if auto)."""
        settings: dict[str, Any] = asdict(self)
        if self.als_reg == AUTO:
            settings["auto"] = {
                "grid": list(GRID),
                "validation_share": VALIDATION_SHARE,
                "search_ratings": SEARCH_RATINGS,
            }
        return settings


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
        diagnostics: sizes, rating scale, penalty search, RMSEs, cluster sizes and agreement,
            squared distances between the states' users (JSON-serialisable).
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
        arrays["diagnostics"] = np.array(json.dumps(self.diagnostics, sort_keys=True))
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


def stream(data_seed: int, purpose: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence(int(data_seed), spawn_key=(purpose,)))


def encode(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The sorted distinct ``ids`` and each id's position among them (int32); small
    non-negative integer ids through a lookup table, others by sorting."""
    if ids.dtype.kind in "iu" and len(ids) and ids.min() >= 0 and ids.max() < 4 * len(ids) + 2**20:
        present = np.zeros(int(ids.max()) + 1, dtype=bool)
        present[ids] = True
        position = (np.cumsum(present) - 1).astype(np.int32)
        return np.flatnonzero(present).astype(ids.dtype), position[ids]
    distinct, codes = np.unique(ids, return_inverse=True)
    return distinct, codes.astype(np.int32).ravel()


def frequent(codes: np.ndarray, least: int) -> np.ndarray:
    """Mask of the entries of ``codes`` whose value occurs at least ``least`` times."""
    return np.bincount(codes)[codes] >= least


def split(n: int, rng: np.random.Generator) -> np.ndarray:
    """Boolean mask of the ``floor(n/2)`` ratings in the train half, uniformly at random."""
    return _random_share(n, n // 2, rng)


def _random_share(n: int, size: int, rng: np.random.Generator) -> np.ndarray:
    chosen = np.zeros(n, dtype=bool)
    chosen[rng.permutation(n)[:size]] = True
    return chosen


@dataclass(frozen=True)
class Half:
    """Some ratings: user and movie indices (int32) and values (float32)."""

    users: np.ndarray
    items: np.ndarray
    values: np.ndarray

    def take(self, mask: np.ndarray) -> Half:
        return Half(self.users[mask], self.items[mask], self.values[mask])

    def fit(
        self, shape: tuple[int, int], s: Settings, reg: float, purpose: int, final: bool = False
    ) -> Factors:
        """ALS at penalty ``reg`` (rank and sweeps of ``s``), started from ``purpose``'s stream.

        A ``final`` fit (the environment's) that shrinks the factors to nothing is refused
        (``refuse_collapse``); the search's fits may collapse, which only scores badly.
        """
        rng = stream(s.data_seed, purpose)
        fit = als(self.users, self.items, self.values, shape, s.rank, reg, s.als_iterations, rng)
        if final:
            refuse_collapse(fit, self.values, s.n_states, reg)
        return fit

    def rmse(self, factors: Factors) -> float:
        return round(factors.rmse(self.users, self.items, self.values), 4)


COLLAPSE = 1e-6  # predictions all below this share of the largest |rating|: no structure


def refuse_collapse(fit: Factors, values: np.ndarray, n_states: int, reg: float) -> None:
    """Raise ``DataError`` if ALS' factors at penalty ``reg`` cannot make the states:
    every prediction ``|U_i · V_j| <= max |U_i| · max |V_j|`` below ``COLLAPSE`` times the
    largest rating, or fewer than ``n_states`` distinct user vectors to cluster."""
    largest = float(np.max(np.abs(values)))
    bound = float(np.max(np.abs(fit.users))) * float(np.max(np.abs(fit.items)))
    distinct = len(np.unique(fit.users, axis=0))
    if bound <= COLLAPSE * largest or distinct < n_states:
        raise DataError(
            "env.als_reg",
            f"ALS at penalty {reg:g} shrinks the factors to nothing (every predicted rating "
            f"at most {bound:.3g} in magnitude, ratings up to {largest:g}; {distinct} distinct "
            f"user vector(s) for {n_states} states): use a smaller penalty, or 'auto'",
        )


def _both(task: Callable[[int], Any]) -> list[Any]:
    """``[task(0), task(1)]`` in two threads (ALS' sparse products release the GIL)."""
    with ThreadPoolExecutor(2) as pool:
        return list(pool.map(task, (0, 1)))


@dataclass(frozen=True)
class Search:
    """The ratings of one half that score a penalty: fitted and held out, re-indexed."""

    fitted: Half
    held_out: Half
    shape: tuple[int, int]

    @classmethod
    def of(cls, half: Half, rng: np.random.Generator) -> Search:
        """``half`` (beyond ``SEARCH_RATINGS``, a random subset of its users' ratings) with
        ``VALIDATION_SHARE`` of it held out at random."""
        counts = np.bincount(half.users)
        if len(half.values) > SEARCH_RATINGS:
            order = rng.permutation(len(counts))
            last = np.searchsorted(np.cumsum(counts[order]), SEARCH_RATINGS)
            member = np.zeros(len(counts), dtype=bool)
            member[order[: last + 1]] = True
            half = half.take(member[half.users])
        users, items = encode(half.users)[1], encode(half.items)[1]
        n = len(half.values)
        held = _random_share(n, round(VALIDATION_SHARE * n), rng)
        compact = Half(users, items, half.values)
        shape = (int(users.max()) + 1, int(items.max()) + 1)
        return cls(compact.take(~held), compact.take(held), shape)

    def squared_error(self, s: Settings, reg: float, purpose: int) -> float:
        held = self.held_out
        factors = self.fitted.fit(self.shape, s, reg, purpose)
        return factors.squared_error(held.users, held.items, held.values)


def start_index(scale: float) -> int:
    """The grid point nearest (in log) to ``10 · scale / 4``, ``scale`` = max - min rating."""
    k = round(math.log2(scale / 4)) if scale > 0 else 0
    return int(np.clip(GRID.index(10.0) + k, 0, len(GRID) - 1))


def hill_climb(score: Callable[[float], float], start: int) -> dict[float, float]:
    """Scores of the grid points visited from ``GRID[start]``, moving to the better
    neighbour while the score falls; at most ``len(GRID)`` scores, a non-finite one refused.
    """
    scores: dict[int, float] = {}

    def at(k: int) -> float:
        if k not in scores:
            value = float(score(GRID[k]))
            if not math.isfinite(value):
                raise DataError(
                    "env.als_reg",
                    f"the penalty search's held-out RMSE at als_reg={GRID[k]:g} is {value}, "
                    "not a finite number: set env.als_reg to a number instead of 'auto'",
                )
            scores[k] = value
        return scores[k]

    k = start
    for _ in range(len(GRID)):
        better = min((j for j in (k - 1, k + 1) if 0 <= j < len(GRID)), key=at)
        if at(better) >= at(k):
            break
        k = better
    return {GRID[j]: scores[j] for j in sorted(scores)}


def penalty_score(halves: tuple[Half, Half], s: Settings) -> tuple[Callable, int, int]:
    """Step 3's score (held-out RMSE of both halves as a function of the penalty), and how
    many ratings are held out and fitted."""
    searches = _both(
        lambda h: Search.of(halves[h], stream(s.data_seed, Purpose.HOLD_OUT_TRAIN + h))
    )
    held_out = sum(len(search.held_out.values) for search in searches)
    if held_out == 0:
        raise DataError(
            "env.als_reg",
            f"too few ratings ({sum(len(h.values) for h in halves)}) to hold "
            f"{VALIDATION_SHARE:.0%} out and choose the penalty: set env.als_reg to a number",
        )

    def score(reg: float) -> float:
        errors = _both(lambda h: searches[h].squared_error(s, reg, Purpose.SEARCH_ALS_TRAIN + h))
        rmse = math.sqrt(sum(errors) / held_out)
        log.info("als_reg %g: held-out RMSE %.4f", reg, rmse)
        return rmse

    fitted = sum(len(search.fitted.values) for search in searches)
    return score, held_out, fitted


def choose_penalty(halves: tuple[Half, Half], s: Settings, scale: float) -> dict[str, Any]:
    """Step 3: the penalty with the lowest held-out RMSE, and the search's diagnostics."""
    score, held_out, fitted = penalty_score(halves, s)
    searched = hill_climb(score, start_index(scale))
    chosen = min(searched, key=searched.__getitem__)
    return {
        "chosen": chosen,
        "validation_rmse": round(searched[chosen], 4),
        "searched": [[reg, round(rmse, 4)] for reg, rmse in searched.items()],
        "grid": [f"{reg:g}" for reg in GRID],
        "held_out": held_out,
        "fitted": fitted,
    }


def _refuse_duplicates(ratings: Ratings, users: np.ndarray, items: np.ndarray) -> None:
    """Refuse ratings in which a user rated a movie twice, naming the first such pair's
    user, movie and lines (``users``, ``items``: the ratings' indices, ``encode``)."""
    width = int(items.max()) + 1
    pairs = np.sort(users.astype(np.int64) * width + items)
    twice = np.flatnonzero(pairs[1:] == pairs[:-1])
    if len(twice):
        user, movie = divmod(int(pairs[twice[0]]), width)
        rows = np.flatnonzero((users == user) & (items == movie))
        raise DataError(
            "env.data_dir",
            f"{ratings.lines(rows)}: user {ratings.users[rows[0]]} rated movie "
            f"{ratings.items[rows[0]]} {len(rows)} times ({len(twice)} repeated ratings in "
            "all); keep one rating per user and movie",
        )


def rating_scale(values: np.ndarray) -> dict[str, float]:
    """Smallest and largest rating, and the smallest gap between two distinct ratings."""
    distinct = np.sort(pd.unique(values)).astype(np.float64)
    step = float(np.diff(distinct).min()) if len(distinct) > 1 else 0.0
    return {"min": float(distinct[0]), "max": float(distinct[-1]), "step": round(step, 6)}


def refuse_no_signal(scale: dict[str, float]) -> None:
    """Refuse kept ratings that are all the same (``rating_scale``)."""
    if scale["min"] == scale["max"]:
        raise DataError(
            "env.data_dir",
            f"every kept rating is {scale['min']:g}: ratings that never differ tell no user's "
            "taste from another's; give ratings that vary (or lower env.min_user_ratings and "
            "env.min_item_ratings to keep them)",
        )


def squared_distances(points: np.ndarray, labels: np.ndarray, k: int) -> dict[str, float]:
    """Mean over pairs of clusters of ``E ||x - y||^2 = ||m_a - m_b||^2 + v_a + v_b`` for
    users of two clusters (``between_users``) and of ``||m_a - m_b||^2`` (``between_means``).
    """
    means = np.stack([points[labels == c].mean(axis=0) for c in range(k)])
    spread = np.array(
        [np.sum((points[labels == c] - means[c]) ** 2, axis=1).mean() for c in range(k)]
    )
    pairs = [(a, b) for a in range(k) for b in range(a + 1, k)]
    between = [float(np.sum((means[a] - means[b]) ** 2)) for a, b in pairs]
    users = [d + spread[a] + spread[b] for d, (a, b) in zip(between, pairs, strict=True)]
    return {
        "between_users": round(float(np.mean(users)), 4),
        "between_means": round(float(np.mean(between)), 4),
    }


@dataclass(frozen=True)
class Kept:
    """Step 1's result: the kept ratings indexed ``0..n-1`` by user and movie, the raw ids
    behind the indices, and the sizes before filtering."""

    user_ids: np.ndarray
    movie_ids: np.ndarray
    users: np.ndarray
    items: np.ndarray
    values: np.ndarray
    raw: dict[str, int]

    @property
    def shape(self) -> tuple[int, int]:
        return len(self.user_ids), len(self.movie_ids)

    def sizes(self) -> dict[str, int]:
        """The diagnostics' ``filtered`` entry."""
        return {
            "ratings": len(self.values),
            "users": self.shape[0],
            "movies": self.shape[1],
            "fewest_ratings_of_a_user": int(np.bincount(self.users).min()),
            "fewest_ratings_of_a_movie": int(np.bincount(self.items).min()),
        }


def keep_frequent(ratings: Ratings, s: Settings) -> Kept:
    """Step 1: the ratings of users and movies with enough ratings in the whole release;
    refuses settings the kept data cannot support."""
    raw_users, user_codes = encode(ratings.users)
    raw_items, item_codes = encode(ratings.items)
    _refuse_duplicates(ratings, user_codes, item_codes)
    user_kept = frequent(user_codes, s.min_user_ratings)
    item_kept = frequent(item_codes, s.min_item_ratings)
    keep = user_kept & item_kept
    if not keep.any():  # named: the threshold that empties the data alone, else both
        both = {"env.min_user_ratings": user_kept, "env.min_item_ratings": item_kept}
        alone = [name for name, kept in both.items() if not kept.any()]
        raise DataError(
            ", ".join(alone or both),
            f"no ratings left after keeping users with >= {s.min_user_ratings} and movies "
            f"with >= {s.min_item_ratings} ratings; lower the thresholds",
        )
    kept_users, users = encode(user_codes[keep])
    kept_items, items = encode(item_codes[keep])
    user_ids, movie_ids = raw_users[kept_users], raw_items[kept_items]
    del user_codes, item_codes
    raw = {"ratings": len(ratings.values), "users": len(raw_users), "movies": len(raw_items)}
    kept = Kept(user_ids, movie_ids, users, items, ratings.values[keep], raw)
    if len(user_ids) < s.n_states:
        raise DataError(
            "env.n_states",
            f"only {len(user_ids)} users left after filtering, fewer than {s.n_states} states",
        )
    if s.rank >= min(kept.shape) // 2:
        raise DataError(
            "env.rank",
            f"rank {s.rank} is too large for the {kept.shape[0]} users x {kept.shape[1]} "
            f"movies left after filtering (each half must be factorised): use "
            f"env.rank < {min(kept.shape) // 2}",
        )
    return kept


def split_halves(kept: Kept, s: Settings) -> tuple[Half, Half]:
    """Step 2: the train and test halves."""
    train = split(len(kept.values), stream(s.data_seed, Purpose.SPLIT))
    return (
        Half(kept.users[train], kept.items[train], kept.values[train]),
        Half(kept.users[~train], kept.items[~train], kept.values[~train]),
    )


def penalty_of(halves: tuple[Half, Half], s: Settings, scale: dict[str, float]) -> dict[str, Any]:
    """Step 3: the penalty, fixed or chosen (the diagnostics' ``penalty`` entry)."""
    if s.als_reg != AUTO:
        return {"mode": "fixed", "value": float(s.als_reg)}
    chosen = choose_penalty(halves, s, scale["max"] - scale["min"])
    return {"mode": AUTO, **chosen, "value": float(chosen["chosen"])}


@dataclass(frozen=True)
class Clusters:
    """Step 5's result: k-means labels of both halves' users and the matching."""

    test_labels: np.ndarray
    train_labels: np.ndarray
    train_of: np.ndarray

    @classmethod
    def of(cls, train_fit: Factors, test_fit: Factors, s: Settings) -> Clusters:
        test_seed = int(stream(s.data_seed, Purpose.KMEANS_TEST).integers(2**31 - 1))
        train_seed = int(stream(s.data_seed, Purpose.KMEANS_TRAIN).integers(2**31 - 1))
        test_labels = kmeans(test_fit.users, s.n_states, test_seed)
        train_labels = kmeans(train_fit.users, s.n_states, train_seed)
        return cls(test_labels, train_labels, match(train_labels, test_labels, s.n_states))

    def sizes(self, s: Settings) -> dict[str, Any]:
        """The diagnostics' ``clusters`` entry."""
        return {
            "test_sizes": np.bincount(self.test_labels, minlength=s.n_states).tolist(),
            "train_sizes": np.bincount(self.train_labels, minlength=s.n_states)[
                self.train_of
            ].tolist(),
            "agreement": round(agreement(self.train_labels, self.test_labels, self.train_of), 4),
        }


def fit_diagnostics(
    halves: tuple[Half, Half], train_fit: Factors, test_fit: Factors
) -> dict[str, Any]:
    """How well the factors fit: held-out RMSEs against the train mean, ALS' objective."""
    train_half, test_half = halves
    baseline = np.mean((test_half.values - train_half.values.mean(dtype=np.float64)) ** 2)
    return {
        "rmse": {
            "train_factors_on_train": train_half.rmse(train_fit),
            "train_factors_on_test": test_half.rmse(train_fit),
            "test_factors_on_test": test_half.rmse(test_fit),
            "test_factors_on_train": train_half.rmse(test_fit),
            "mean_rating_baseline_on_test": round(float(np.sqrt(baseline)), 4),
        },
        "als_objective_decrease": {
            half: [round(float(f.objective[0]), 2), round(float(f.objective[-1]), 2)]
            for half, f in (("train", train_fit), ("test", test_fit))
        },
    }


def state_distances(
    test_fit: Factors, train_fit: Factors, clusters: Clusters, prior_means: np.ndarray, k: int
) -> dict[str, Any]:
    """How far apart the states are (the diagnostics' ``squared_distance`` and
    ``mean_norm`` entries)."""
    pairs = [np.sum((a - b) ** 2) for i, a in enumerate(prior_means) for b in prior_means[i + 1 :]]
    return {
        "squared_distance": {
            "test_users": squared_distances(test_fit.users, clusters.test_labels, k),
            "prior_means": round(float(np.mean(pairs)), 4),
        },
        "mean_norm": {
            "test_users": round(float(np.linalg.norm(test_fit.users, axis=1).mean()), 4),
            "train_users": round(float(np.linalg.norm(train_fit.users, axis=1).mean()), 4),
        },
    }


def prepare(ratings: Ratings, settings: Settings) -> Prepared:
    """Steps 1–6 on parsed ratings."""
    start = time.perf_counter()
    s = settings
    kept = keep_frequent(ratings, s)
    halves = split_halves(kept, s)
    scale = rating_scale(kept.values)
    refuse_no_signal(scale)
    filtered, shape, user_ids, movie_ids = kept.sizes(), kept.shape, kept.user_ids, kept.movie_ids
    raw = kept.raw
    del kept  # the halves hold the ratings from here on
    penalty = penalty_of(halves, s, scale)
    train_fit, test_fit = _both(
        lambda h: halves[h].fit(
            shape, s, penalty["value"], (Purpose.ALS_TRAIN, Purpose.ALS_TEST)[h], final=True
        )
    )
    clusters = Clusters.of(train_fit, test_fit, s)
    prior_means, prior_covariances = gaussian_priors(
        train_fit.users, clusters.train_labels, clusters.train_of
    )
    genres = ratings.genres_of(movie_ids)
    diagnostics = {
        "raw": raw,
        "filtered": filtered,
        "scale": scale,
        "split": {"train": len(halves[0].values), "test": len(halves[1].values)},
        "genres": {n: int(c) for n, c in zip(ratings.genre_names, genres.sum(axis=0), strict=True)},
        "movies_without_genre": int((~genres.any(axis=1)).sum()),
        "penalty": penalty,
        **fit_diagnostics(halves, train_fit, test_fit),
        "clusters": clusters.sizes(s),
        **state_distances(test_fit, train_fit, clusters, prior_means, s.n_states),
        "build_seconds": round(time.perf_counter() - start, 2),
    }
    return Prepared(
        user_ids=user_ids,
        movie_ids=movie_ids,
        test_users=test_fit.users,
        test_items=test_fit.items,
        train_users=train_fit.users,
        train_items=train_fit.items,
        test_labels=clusters.test_labels,
        train_labels=clusters.train_labels,
        train_of=clusters.train_of,
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
    cached: bool = True  # False: built, but the cache could not be written (a full disk)


def cache_path(root: Path, key: str) -> Path:
    return root / "prepared" / f"movielens-{key}.npz"


def source_identity(layout: Layout) -> dict[str, Any]:
    """What identifies a release in a cache key: its format and the SHA-256 of each file."""
    files = {f.name: prepared_cache.file_digest(f) for f in layout.files}
    return {"format": layout.format, "fingerprint": files[layout.ratings.name], "files": files}


def load_or_prepare(folder: Path, settings: Settings, root: Path) -> Loaded:
    """The prepared data of the release in ``folder``: from the cache, or built and cached."""
    start = time.perf_counter()
    layout = detect(folder)
    identity = source_identity(layout)
    key = prepared_cache.digest(
        {"version": VERSION, "source": identity, "settings": settings.key()}
    )
    path = cache_path(root, key)
    stored = prepared_cache.load(path, key, Prepared.fields())
    if stored is not None:
        data = Prepared.from_arrays(stored)
        refuse_no_signal(data.diagnostics["scale"])  # cached before this was refused
        return Loaded(data, path, True, time.perf_counter() - start, Path(folder))
    log.info("preparing MovieLens data from %s (cached afterwards in %s)", folder, path)
    data = prepare(read_release(folder, layout), settings)
    data.diagnostics["source"] = {"folder": str(folder), **identity}
    data.diagnostics["settings"] = settings.key()
    cached = prepared_cache.save(path, key, data.to_arrays())
    return Loaded(data, path, False, time.perf_counter() - start, Path(folder), cached)
