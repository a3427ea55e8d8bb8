"""Rating counts per user cluster, genre and rating value, for ``env=movielens_genres``
(docs/design.md §3.6).

From a release's own files (``nslb_cli.data.ratings``, any supported layout):

1. users with at least ``min_user_ratings`` ratings are kept;
2. each kept user's profile is their taste: their mean rating of each genre minus their
   mean rating of all movies (0 for a genre they never rated), so that clusters group
   tastes rather than generous and harsh raters; k-means
   (``kmeans``, seeded by ``data_seed``) splits the profiles
   into ``n_states`` clusters;
3. ``counts[s, g, o]`` is the number of ratings of value ``levels[o]`` that the users of
   cluster ``s`` gave to movies of genre ``g``. A movie of several genres counts for each
   of them; a movie without a genre counts for none, and so does a movie that the movie
   list does not list (said in one warning line).

``kept`` counts the ratings left after each step (``STEPS``); a run folder's
``data.json`` records it.

The outcomes ``levels`` are the release's distinct rating values, sorted. The arrays are
cached by ``prepared_cache``.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from nslb_cli.data import DataError, prepared_cache
from nslb_cli.data.clusters import kmeans
from nslb_cli.data.prepare import encode, frequent, source_identity
from nslb_cli.data.ratings import Ratings, detect, read_release

log = logging.getLogger("nslb")

VERSION = 2  # bump when a change of code changes the counts
MAX_LEVELS = 64  # distinct rating values (outcomes): switching_latent's largest size
DATA_DIR = "env.data_dir"
STEPS = ("read", "of_a_listed_movie", "of_a_kept_user", "of_a_movie_with_a_genre")


@dataclass(frozen=True)
class GenreSettings:
    """Every setting that changes the counts (and so the cache key)."""

    min_user_ratings: int
    n_states: int
    data_seed: int


@dataclass(frozen=True)
class GenreCounts:
    """``counts (S, G, N)``, ``levels (N,)``, the ``G`` genre names, users per cluster
    ``(S,)``, the ratings kept after each of the ``STEPS`` and the SHA-256 of the ratings
    file."""

    counts: np.ndarray
    levels: np.ndarray
    genre_names: tuple[str, ...]
    cluster_sizes: np.ndarray
    kept: np.ndarray
    fingerprint: str

    FIELDS = ("counts", "levels", "genre_names", "cluster_sizes", "kept", "fingerprint")

    def to_arrays(self) -> dict[str, np.ndarray]:
        arrays = {name: np.asarray(getattr(self, name)) for name in self.FIELDS}
        arrays["genre_names"] = np.array(self.genre_names, dtype=str)
        return arrays

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray]) -> GenreCounts:
        return cls(
            counts=arrays["counts"],
            levels=arrays["levels"],
            genre_names=tuple(str(g) for g in arrays["genre_names"]),
            cluster_sizes=arrays["cluster_sizes"],
            kept=arrays["kept"],
            fingerprint=str(arrays["fingerprint"]),
        )


def _outcomes(ratings: Ratings, where: str) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rating values and each rating's index among them."""
    levels, level = np.unique(ratings.values, return_inverse=True)
    if not 2 <= len(levels) <= MAX_LEVELS:
        raise DataError(DATA_DIR, f"{where}: the ratings take {len(levels)} distinct values; "
                        f"movielens_genres needs 2 to {MAX_LEVELS} (its outcomes)")  # fmt: skip
    return levels.astype(float), level.ravel()


def _profiles(user: np.ndarray, values: np.ndarray, flags: np.ndarray) -> np.ndarray:
    """``(U, G)`` each user's mean rating of each genre minus their overall mean (0 if none)."""
    U, G = int(user.max()) + 1, flags.shape[1]
    total = np.bincount(user, minlength=U).astype(float)
    overall = np.bincount(user, weights=values, minlength=U) / total
    profile = np.zeros((U, G))
    for g in range(G):
        number = np.bincount(user[flags[:, g]], minlength=U)
        sums = np.bincount(user[flags[:, g]], weights=values[flags[:, g]], minlength=U)
        np.divide(sums, number, out=profile[:, g], where=number > 0)
        profile[:, g] -= np.where(number > 0, overall, 0.0)
    return profile


def count(ratings: Ratings, s: GenreSettings) -> GenreCounts:
    """Steps 1–3 of the module docstring (``fingerprint`` left empty)."""
    where = str(ratings.source or "the ratings")
    movie_ids, item = encode(ratings.items)
    genres = ratings.genres_of(movie_ids)
    if not genres.any():
        raise DataError(DATA_DIR, f"{where}: no rated movie has a genre, and movielens_genres' "
                        "arms are genres: use a release with its movie list (u.item, movies.dat, "
                        "movies.csv) or add items.csv (item,genres)")  # fmt: skip
    levels, level = _outcomes(ratings, where)
    users = encode(ratings.users)[1]
    keep = frequent(users, s.min_user_ratings)
    user = np.unique(users[keep], return_inverse=True)[1].ravel()
    flags, level = genres[item[keep]], level[keep]
    values = ratings.values[keep].astype(float)
    profile = _profiles(user, values, flags) if keep.any() else np.zeros((0, genres.shape[1]))
    distinct = len(np.unique(profile, axis=0))
    if distinct < s.n_states:
        raise DataError("env.n_states", f"n_states={s.n_states}, but {where} has {distinct} "
                        "distinct user profiles among users with at least min_user_ratings="
                        f"{s.min_user_ratings} ratings: lower env.n_states or "
                        "env.min_user_ratings")  # fmt: skip
    labels = kmeans(profile, s.n_states, s.data_seed)
    S, G, N = s.n_states, genres.shape[1], len(levels)
    counts = np.empty((S, G, N), dtype=np.int64)
    for g in range(G):
        cell = labels[user[flags[:, g]]] * N + level[flags[:, g]]
        counts[:, g] = np.bincount(cell, minlength=S * N).reshape(S, N)
    sizes = np.bincount(labels, minlength=S)
    listed = ratings.listed(ratings.items)
    kept = np.array([len(listed), listed.sum(), (listed & keep).sum(), flags.any(axis=1).sum()])
    return GenreCounts(counts, levels, ratings.genre_names, sizes, kept, "")


def warn_of_unlisted(data: GenreCounts, folder: Path) -> None:
    """One warning line when ratings of movies that the movie list lacks were dropped."""
    read, listed = int(data.kept[0]), int(data.kept[1])
    if listed < read:
        log.warning(
            "%s: %d of %d ratings (%.0f %%) are of movies that the movie list does not list; "
            "movielens_genres drops them (data.json counts the ratings kept at each step)",
            folder,
            read - listed,
            read,
            100 * (read - listed) / read,
        )


def load_or_count(folder: Path, settings: GenreSettings, root: Path) -> GenreCounts:
    """The counts of the release in ``folder``: from the cache, or built and cached."""
    layout = detect(folder)
    identity = source_identity(layout)
    key = prepared_cache.digest(
        {"version": VERSION, "source": identity, "settings": asdict(settings)}
    )
    path = root / "prepared" / f"movielens-genres-{key}.npz"
    stored = prepared_cache.load(path, key, GenreCounts.FIELDS)
    if stored is not None:
        built = GenreCounts.from_arrays(stored)
    else:
        log.info("counting MovieLens ratings by genre from %s (cached in %s)", folder, path)
        built = count(read_release(folder, layout), settings)
        built = GenreCounts(**{**built.__dict__, "fingerprint": identity["fingerprint"]})
        prepared_cache.save(path, key, built.to_arrays())
    warn_of_unlisted(built, folder)
    return built
