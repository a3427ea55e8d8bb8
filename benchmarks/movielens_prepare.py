"""Benchmark: preparing a release of ML-25M's size (``make bench-data``; not a test).

``python -m benchmarks.movielens_prepare`` writes a synthetic release in the ML-25M format, then
times ``nslb data prepare`` on it with the default settings of ``env=movielens`` (a fresh
process and an empty cache each time, best of ``--repeat``) and reports the wall time and
the peak resident memory of each run. The target (issue 11): 60 s and 4 GB or less.

The generated release (``generate``) has ML-25M's shape: 25,000,000 ratings
(``userId,movieId,rating,timestamp``, half stars 0.5–5.0) by 162,541 users on 59,047 of
62,423 listed movies (``movies.csv`` with ``|``-separated genres). User activity follows
the log-normal fitted to ML-25M (``20 + 39.9 exp(1.589 Z)`` ratings, at least 20);
movie popularity is ``(rank + 200)^-1.7`` (about 7,000 movies reach 200 ratings, Gini
0.93; ML-25M: 0.94). Ratings come from a rank-4 model with user and movie biases plus
noise, rounded to half stars, so filtering, ALS and k-means do real work.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

N_RATINGS = 25_000_000
N_USERS = 162_541
N_MOVIES = 62_423  # listed in movies.csv
N_RATED = 59_047  # of which rated
MAX_MOVIE_ID = 209_171
MOST_ACTIVE = 32_202  # ratings of ML-25M's most active user
GENRES = np.array(
    ["Action", "Adventure", "Animation", "Children", "Comedy", "Crime", "Documentary"]
    + ["Drama", "Fantasy", "Film-Noir", "Horror", "IMAX", "Musical", "Mystery", "Romance"]
    + ["Sci-Fi", "Thriller", "War", "Western"]
)
HALF_STARS = [f"{k / 2:.1f}" for k in range(1, 11)]
CHUNK = 2_000_000
TARGET_SECONDS, TARGET_BYTES = 60.0, 4 * 2**30


def user_counts(rng: np.random.Generator, n_users: int, n_ratings: int) -> np.ndarray:
    """Ratings per user: ML-25M's log-normal activity, from 20 to ML-25M's most active
    user's 32,202, summing to about ``n_ratings``."""
    activity = 39.862 * np.exp(1.589 * rng.standard_normal(n_users))
    activity *= (n_ratings - 20 * n_users) / activity.sum()
    return 20 + np.minimum(np.round(activity), MOST_ACTIVE - 20).astype(np.int64)


def rated_pairs(rng: np.random.Generator, n_users: int, n_ratings: int) -> np.ndarray:
    """``n_ratings`` distinct (user, movie) pairs as sorted keys ``user * N_RATED + movie``:
    movies drawn by popularity for each user's ratings (with some to spare), repeated
    pairs dropped, then ``n_ratings`` of them kept at random."""
    counts = user_counts(rng, n_users, n_ratings)
    popularity = (rng.permutation(N_RATED) + 200.0) ** -1.7
    cdf = np.cumsum(popularity / popularity.sum())
    keys = np.empty(0, dtype=np.int64)
    spare = 1.2
    while len(keys) < n_ratings:
        users = np.repeat(np.arange(n_users), np.ceil(spare * counts).astype(np.int64))
        movies = np.minimum(np.searchsorted(cdf, rng.random(len(users))), N_RATED - 1)
        keys = np.unique(np.concatenate([keys, users * N_RATED + movies]))
        spare = 0.5 * spare
    return np.sort(rng.choice(keys, n_ratings, replace=False))


def generate(folder: Path, n_ratings: int = N_RATINGS, seed: int = 0) -> Path:
    """Write ``ratings.csv`` and ``movies.csv`` of an ML-25M-shaped release into ``folder``."""
    import pyarrow as pa
    from pyarrow import csv

    rng = np.random.default_rng(seed)
    n_users = max(1, round(N_USERS * n_ratings / N_RATINGS))
    folder.mkdir(parents=True, exist_ok=True)
    movie_ids = np.sort(rng.choice(np.arange(1, MAX_MOVIE_ID + 1), N_MOVIES, replace=False))
    rated = np.sort(rng.choice(N_MOVIES, N_RATED, replace=False))
    flags = rng.random((N_MOVIES, len(GENRES))) < 0.1
    flags[np.arange(N_MOVIES), rng.integers(len(GENRES), size=N_MOVIES)] = True
    lines = (
        f'{movie},"Movie {movie}, a title (1999)",{"|".join(GENRES[row])}\n'
        for movie, row in zip(movie_ids, flags, strict=True)
    )
    (folder / "movies.csv").write_text("movieId,title,genres\n" + "".join(lines), encoding="utf-8")
    keys = rated_pairs(rng, n_users, n_ratings)
    rank = 4
    taste = rng.normal(0.0, 0.5, (n_users, rank)).astype(np.float32)
    profile = rng.normal(0.0, 0.5, (N_RATED, rank)).astype(np.float32)
    user_bias = rng.normal(0.0, 0.4, n_users).astype(np.float32)
    movie_bias = rng.normal(0.0, 0.5, N_RATED).astype(np.float32)
    stars = pa.array(HALF_STARS)
    options = csv.WriteOptions(include_header=False, quoting_style="none")
    with open(folder / "ratings.csv", "wb") as handle:
        handle.write(b"userId,movieId,rating,timestamp\n")
        for start in range(0, n_ratings, CHUNK):
            part = keys[start : start + CHUNK]
            user, movie = part // N_RATED, part % N_RATED
            score = 3.5 + user_bias[user] + movie_bias[movie]
            score += np.einsum("nd,nd->n", taste[user], profile[movie])
            score += rng.normal(0.0, 0.8, len(part)).astype(np.float32)
            half_star = np.clip(np.round(2 * score), 1, 10).astype(np.int8) - 1
            table = pa.table(
                {
                    "userId": pa.array((user + 1).astype(np.int32)),
                    "movieId": pa.array(movie_ids[rated[movie]].astype(np.int32)),
                    "rating": pa.DictionaryArray.from_arrays(pa.array(half_star), stars),
                    "timestamp": pa.array(rng.integers(789_652_009, 1_574_327_703, len(part))),
                }
            )
            csv.write_csv(table, handle, options)
    return folder


def prepare_once(folder: Path, cache: Path, overrides: list[str]) -> dict:
    """``nslb data prepare --json`` on ``folder`` in a fresh process with an empty cache:
    its wall time, its peak resident memory and its diagnostics."""
    command = [
        sys.executable, "-c", "from nslb_cli.cli import main; main()", "data", "prepare", "--json",
        f"env.data_dir={folder}", f"env.cache_dir={cache}", *overrides,
    ]  # fmt: skip
    start = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.PIPE, text=True)
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode != 0:
            raise SystemExit(f"nslb data prepare failed: {process.stderr.read()}")
        out.seek(0)
        report = json.load(out)
    return {
        "seconds": seconds,
        "cpu_seconds": usage.ru_utime + usage.ru_stime,
        "peak_rss_bytes": usage.ru_maxrss * 1024,
        "report": report,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.movielens_prepare", description=__doc__
    )
    parser.add_argument("--ratings", type=int, default=N_RATINGS, help="ratings to generate")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs (best is reported)")
    parser.add_argument("--folder", type=Path, help="keep the release here (reused if present)")
    parser.add_argument("overrides", nargs="*", help="env.key=value settings for the runs")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="nslb-bench-data-") as scratch:
        folder = args.folder or Path(scratch) / "release"
        if not (folder / "ratings.csv").is_file():
            start = time.perf_counter()
            generate(folder, args.ratings)
            print(f"generated {args.ratings:,} ratings in {time.perf_counter() - start:.1f} s")
        size = (folder / "ratings.csv").stat().st_size
        print(f"release: {folder} (ratings.csv {size / 2**20:.0f} MiB)")
        runs = []
        for repeat in range(args.repeat):
            load = os.getloadavg()[0]
            run = prepare_once(folder, Path(scratch) / f"cache-{repeat}", args.overrides)
            runs.append(run)
            print(
                f"run {repeat + 1}: {run['seconds']:.1f} s ({run['cpu_seconds']:.1f} s of CPU), "
                f"peak RSS {run['peak_rss_bytes'] / 2**30:.2f} GiB (load {load:.1f})"
            )
    best = min(runs, key=lambda r: r["seconds"])
    report = best["report"]
    kept, penalty = report["filtered"], report["penalty"]
    print(
        f"kept {kept['ratings']:,} ratings by {kept['users']:,} users on {kept['movies']:,} "
        f"movies; penalty {penalty['value']:g} (searched {penalty.get('searched', '-')})"
    )
    seconds, peak = best["seconds"], max(r["peak_rss_bytes"] for r in runs)
    verdict = "within" if seconds <= TARGET_SECONDS and peak <= TARGET_BYTES else "OVER"
    print(
        f"best {seconds:.1f} s, peak RSS {peak / 2**30:.2f} GiB: {verdict} the target "
        f"({TARGET_SECONDS:.0f} s, {TARGET_BYTES / 2**30:.0f} GiB) on {os.cpu_count()} cores"
    )


if __name__ == "__main__":
    main()
