"""Tiny MovieLens releases written in tmp folders, in each supported format.

A ``TinyRelease`` is drawn from a rank-3 model so the pipeline has structure to find; the
writers put the same ratings and genres into the ML-100K, ML-1M, CSV and generic
(``user,item,rating`` + optional ``items.csv``) layouts, so every parser can be checked
against the ground truth. ``half_stars=True`` rounds the ratings to halves (ML-10M and
later), ``scale`` multiplies them (a rating scale other than 1–5).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from nslb_cli.data.prepare import Settings
from nslb_cli.envs.movielens import MovieLensParams
from tests.helpers.paths import ML_100K

needs_ml_100k = pytest.mark.skipif(
    not (ML_100K / "u.data").is_file(),
    reason=f"the ML-100K release is not in {ML_100K} (the repository's ../shared)",
)
GENRES = ("Action", "Comedy", "Drama", "Film-Noir", "Sci-Fi")


@dataclass(frozen=True)
class TinyRelease:
    users: np.ndarray  # raw ids of each rating
    items: np.ndarray
    values: np.ndarray
    movie_ids: np.ndarray  # sorted
    genres: np.ndarray  # (n_movies, len(GENRES)) bool; the last movie has none


def tiny_release(
    n_users: int = 60,
    n_movies: int = 40,
    seed: int = 0,
    half_stars: bool = False,
    scale: float = 1.0,
) -> TinyRelease:
    rng = np.random.default_rng(seed)
    groups = np.arange(n_users) % 3  # three groups of users with distinct tastes
    user_factors = rng.normal(0, 1, (n_users, 3)) + 4 * np.eye(3)[groups]
    movie_factors = rng.normal(0, 0.5, (n_movies, 3))
    scores = user_factors @ movie_factors.T
    observed = rng.random((n_users, n_movies)) < 0.7
    users, items = np.nonzero(observed)
    if half_stars:
        values = np.clip(np.round(2 * (3 + scores[users, items])) / 2, 0.5, 5)
    else:
        values = np.clip(np.round(3 + scores[users, items]), 1, 5)
    values = values * scale
    movie_ids = np.arange(n_movies) * 3 + 1  # raw ids need not be contiguous
    genres = rng.random((n_movies, len(GENRES))) < 0.3
    genres[np.arange(n_movies - 1), rng.integers(len(GENRES), size=n_movies - 1)] = True
    genres[-1] = False
    return TinyRelease(users + 10, movie_ids[items], values, movie_ids, genres)


def write_ml100k(release: TinyRelease, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    names = ("unknown", *GENRES)
    (folder / "u.genre").write_text("".join(f"{g}|{i}\n" for i, g in enumerate(names)) + "\n")
    rows = []
    for movie, flags in zip(release.movie_ids, release.genres, strict=True):
        bits = "|".join(str(int(f)) for f in (not flags.any(), *flags))
        rows.append(f"{movie}|Movie {movie} (1999)|01-Jan-1999||http://x/{movie}|{bits}\n")
    (folder / "u.item").write_text("".join(rows), encoding="latin-1")
    lines = (
        f"{u}\t{i}\t{int(v)}\t88125{k:04d}\n"
        for k, (u, i, v) in enumerate(
            zip(release.users, release.items, release.values, strict=True)
        )
    )
    (folder / "u.data").write_text("".join(lines))
    return folder


def _genre_list(flags: np.ndarray, none: str) -> str:
    return "|".join(g for g, f in zip(GENRES, flags, strict=True) if f) or none


def write_ml1m(release: TinyRelease, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    movies = (
        f'{m}::Café {m}: a "title" (1999)::{_genre_list(g, "Drama")}\n'
        for m, g in zip(release.movie_ids[:-1], release.genres[:-1], strict=True)
    )
    (folder / "movies.dat").write_text("".join(movies), encoding="latin-1")
    lines = (
        f"{u}::{i}::{int(v)}::97830{k:04d}\n"
        for k, (u, i, v) in enumerate(
            zip(release.users, release.items, release.values, strict=True)
        )
    )
    (folder / "ratings.dat").write_text("".join(lines))
    return folder


def write_csv(release: TinyRelease, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    movies = ["movieId,title,genres\n"] + [
        f'{m},"Movie, {m} (1999)",{_genre_list(g, "(no genres listed)")}\n'
        for m, g in zip(release.movie_ids, release.genres, strict=True)
    ]
    (folder / "movies.csv").write_text("".join(movies), encoding="utf-8")
    lines = ["userId,movieId,rating,timestamp\n"] + [
        f"{u},{i},{v:.1f},97830{k:04d}\n"
        for k, (u, i, v) in enumerate(
            zip(release.users, release.items, release.values, strict=True)
        )
    ]
    (folder / "ratings.csv").write_text("".join(lines))
    return folder


def write_generic(
    release: TinyRelease, folder: Path, genres: bool = True, text_ids: bool = False
) -> Path:
    """Your own ratings: ``ratings.csv`` (``user,item,rating,timestamp``) and, with
    ``genres``, ``items.csv`` (``item,genres``); ``text_ids`` writes ids as ``u<id>`` and
    ``m<id>``."""
    folder.mkdir(parents=True, exist_ok=True)
    user, item = ("u{}", "m{}") if text_ids else ("{}", "{}")
    lines = ["user,item,rating,timestamp\n"] + [
        f"{user.format(u)},{item.format(i)},{v:g},{k}\n"
        for k, (u, i, v) in enumerate(
            zip(release.users, release.items, release.values, strict=True)
        )
    ]
    (folder / "ratings.csv").write_text("".join(lines))
    if genres:
        rows = ["item,genres\n"] + [
            f"{item.format(m)},{_genre_list(g, '')}\n"
            for m, g in zip(release.movie_ids, release.genres, strict=True)
        ]
        (folder / "items.csv").write_text("".join(rows))
    return folder


TINY = Settings(
    min_user_ratings=20,
    min_item_ratings=30,
    rank=3,
    als_reg=1.0,
    als_iterations=15,
    n_states=3,
    data_seed=0,
)
"""Preparation settings for ``tiny_release`` (those of ``tiny_env_params``)."""

TINY_RUN = [
    "env.min_user_ratings=20",
    "env.min_item_ratings=30",
    "env.rank=3",
    "env.n_states=3",
    "env.n_arms=6",
    "env.horizon=60",
    "run.n_seeds=2",
    "run.progress=false",
]
"""``nslb run env=movielens`` overrides of a tiny release's run (``TINY``'s filtering, a
rank-3 model, 2 seeds of 60 rounds)."""


def tiny_env_params(root: Path, horizon: int) -> MovieLensParams:
    """``env=movielens`` on a tiny CSV release (60 users, 40 movies, 5 genres) written under
    ``root``: rank 3, 3 states, 6 arms, its cache in ``root / "cache"``."""
    return MovieLensParams(
        data_dir=str(write_csv(tiny_release(), root / "release")),
        cache_dir=str(root / "cache"),
        min_user_ratings=20,
        min_item_ratings=30,
        rank=3,
        als_reg=1.0,
        n_states=3,
        n_arms=6,
        horizon=horizon,
    )
