"""Numbers that overflow, and searches that could run forever: nothing hangs, nothing is
silently NaN.

* Every lower bound of a ``Params`` field that keeps a draw or a product from underflowing:
  the absurd value is refused by the check of the command line in one line naming the key,
  nothing written; the value just inside runs through the command line and simulates
  finitely (no numpy warning either; ``make test-full``). One row per bound in ``BOUNDS``.
* Integers beyond 64 bits are refused in one line (``10**400`` used to reach numpy).
* Ratings whose magnitude overflows ALS' float32 squares are refused when read, naming the
  file and the largest value; ALS itself refuses non-finite factors, a singular system and a
  penalty beyond float32; a penalty that shrinks every factor to zero is refused instead of
  giving NaN priors.
* The penalty search ends after at most ``len(GRID)`` scores, and stops in one line on a
  score that is not finite (a NaN used to make it bounce between two grid points forever).

Searches run under a deadline (SIGALRM), so a regression fails instead of hanging the suite.
"""

from __future__ import annotations

import json
import math
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from types import FrameType

import numpy as np
import pandas as pd
import pytest

from nslb_cli.api import ConfigError
from nslb_cli.data import DataError
from nslb_cli.data.als import als
from nslb_cli.data.prepare import AUTO, GRID, Search, choose_penalty, hill_climb, prepare
from nslb_cli.data.ratings import MAX_RATING, Ratings, read_release
from nslb_cli.runner.compose import check_command_line
from tests.data.test_prepare_penalty import SEARCH, factorisable_halves
from tests.helpers.cli import nslb, said
from tests.helpers.movielens import (
    TINY,
    tiny_release,
    write_csv,
    write_generic,
    write_ml1m,
    write_ml100k,
)

QUICK = ["env.horizon=60", "run.n_seeds=2", "run.progress=false"]
FINITE_COLUMNS = ("reward", "expected_reward", "optimal_reward", "regret", "cum_regret")


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Fail with ``TimeoutError`` if the block takes longer than ``seconds`` (SIGALRM: a
    pure-Python loop is interrupted, so a hang fails the test instead of the suite)."""

    def expire(signum: int, frame: FrameType | None) -> None:
        raise TimeoutError(f"still running after {seconds} s: a search that does not end")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def assert_refused(done, key: str, cwd: Path, written: bool = False) -> str:  # noqa: ANN001
    """Exit status 2, stderr exactly one ``nslb: error: KEY: …`` line, no seed written (and,
    unless ``written``, no output folder at all). Returns the message."""
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"nslb: error: {key}: "), lines[0]
    assert not list(cwd.rglob("seed=*.csv")), "nothing may be written"
    if not written:
        assert not (cwd / "outputs").exists()
    return lines[0]


def assert_finite_run(done, cwd: Path, seeds: int = 2) -> None:  # noqa: ANN001
    """Exit status 0, nothing on stderr (no numpy overflow warning), finite results."""
    assert done.returncode == 0, done.stderr
    assert said(done.stderr) == [], done.stderr
    csvs = sorted(cwd.rglob("seed=*.csv"))
    assert len(csvs) == seeds
    for path in csvs:
        frame = pd.read_csv(path)
        assert np.isfinite(frame[list(FINITE_COLUMNS)].to_numpy()).all(), path
        beliefs = frame["p_true_state"].dropna().to_numpy()
        assert np.isfinite(beliefs).all() and (beliefs >= 0).all() and (beliefs <= 1).all()
        summary = json.loads(path.with_suffix(".json").read_text())
        numbers = [v for v in summary.values() if isinstance(v, int | float)]
        assert all(math.isfinite(v) for v in numbers), summary


CLICKS = ["env.model=prior", "env.reward=bernoulli", "agent=umts"]
# key, just inside, absurd, further overrides (an agent that uses the value)
BOUNDS = [
    # below 0.01 numba's Beta sampler in umTS retries ~a million times a draw: a hang
    ("env.prior_strength", "0.01", "1e-9", CLICKS),
    ("agent.gamma", "1e-9", "1e-300", ["agent=cd_ucb"]),
    ("agent.ridge", "1e-6", "1e-300", ["agent=cd_lints"]),
]


def refused(overrides: list[str], key: str, cwd: Path) -> str:
    """The check of the command line (what ``nslb run`` does before anything runs) refuses
    ``overrides`` naming ``key`` in one line, and writes nothing. Returns the message."""
    with pytest.raises(ConfigError) as refusal:
        check_command_line(overrides, multirun=False)
    assert refusal.value.key == key, str(refusal.value)
    assert "\n" not in str(refusal.value)
    assert not list(cwd.iterdir()), "nothing may be written"
    return refusal.value.message


HUGE = str(10**400)
INTEGERS = [
    ("env.horizon", HUGE, []),
    ("env.n_arms", str(2**63), []),
    ("env.n_states", str(-(2**64)), []),
    ("agent.tau", HUGE, ["agent=cd_ucb"]),
    ("agent.tau", str(2**63), ["agent=cd_lints"]),
    ("agent.tau", HUGE, ["agent=sw_mucb"]),
    ("env.rank", HUGE, ["env=movielens", "env.data_dir=."]),
    ("env.min_user_ratings", str(2**63), ["env=movielens", "env.data_dir=."]),
]


def test_integers_beyond_64_bits_are_refused_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    quick = ["run.n_seeds=2", "run.progress=false"]  # no env.horizon: a row sets it
    for key, value, extra in INTEGERS:
        message = refused([*extra, f"{key}={value}", *quick], key, tmp_path)
        assert "must be a 64-bit integer" in message, key


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_csv(tiny_release(), tmp_path_factory.mktemp("ml") / "release")


def movielens(release: Path, cwd: Path) -> list[str]:
    """``env=movielens`` on the tiny release (rank 3, 3 states, 6 arms), cached beside it."""
    return [
        "env=movielens", f"env.data_dir={release}", f"env.cache_dir={cwd / 'cache'}",
        "env.min_user_ratings=20", "env.min_item_ratings=30", "env.rank=3", "env.als_reg=1",
        "env.n_states=3", "env.n_arms=6",
    ]  # fmt: skip


def test_every_bound_refuses_the_absurd_value_in_one_line_naming_its_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(How a refusal reaches the terminal, one line and exit status 2, is the command
    line's promise, shown once for all in ``tests/cli/test_errors.py``.)"""
    monkeypatch.chdir(tmp_path)
    for key, _, outside, extra in BOUNDS:
        refused([*extra, f"{key}={outside}", *QUICK], key, tmp_path)


@pytest.mark.slow
def test_every_value_just_inside_a_bound_simulates_finitely(tmp_path: Path, release: Path) -> None:
    """Through the command line: exit status 0, no numpy warning, finite results."""
    for n, (key, inside, _, extra) in enumerate(BOUNDS):
        folder = tmp_path / f"inside{n}"
        folder.mkdir()
        assert_finite_run(nslb("run", *extra, f"{key}={inside}", *QUICK, cwd=folder), folder)


@pytest.mark.slow
def test_a_penalty_that_zeroes_the_factors_is_one_line(tmp_path: Path, release: Path) -> None:
    """1e12 zeroes every factor of 1-5 stars: the preparation refuses it in one line instead
    of clustering zeros into NaN priors, in ``nslb run`` and ``nslb data prepare`` (in CI:
    the preparation itself, below)."""
    base = movielens(release, tmp_path)
    done = nslb("run", *base, "env.als_reg=1e12", *QUICK, cwd=tmp_path)
    message = assert_refused(done, "env.als_reg", tmp_path, written=True)
    assert "shrinks the factors to nothing" in message and "use a smaller penalty" in message
    prepared = nslb("data", "prepare", *base[1:], "env.als_reg=1e12", cwd=tmp_path)
    assert_refused(prepared, "env.als_reg", tmp_path, written=True)


def ratings_with(value: float) -> tuple[object, np.ndarray]:
    """The tiny release with one rating replaced by ``value``."""
    release = tiny_release()
    values = release.values.astype(float).copy()
    values[7] = value
    return replace(release, values=values), values


OVER = [  # every format's reader; the generic CSV's float32 parser turns 1e39 into inf
    (write_generic, 3e7),
    (write_generic, -2e6),
    (write_generic, 1e39),
    (write_csv, 3e7),
    (write_ml1m, 3e7),
    (write_ml100k, 3e7),
]


def test_ratings_beyond_a_million_are_refused_naming_the_file_and_the_value(
    tmp_path: Path,
) -> None:
    for n, (writer, value) in enumerate(OVER):
        release, _ = ratings_with(value)
        folder = writer(release, tmp_path / f"release{n}")
        with pytest.raises(DataError) as refused:
            read_release(folder)
        assert refused.value.key == "env.data_dir"
        message = str(refused.value)
        assert "\n" not in message and "at most 1e+06 in magnitude" in message
        assert f"found {abs(value):g}" in message, message  # the value in the file, not inf
        assert str(folder) in message


def test_ratings_of_a_million_are_kept_and_factorise_finitely(tmp_path: Path) -> None:
    """The bound itself, both signs, on a 1e6 scale: read exactly, finite factors and priors."""
    release = tiny_release()
    values = (release.values - 3) * (MAX_RATING / 2)  # -1e6 .. 1e6
    folder = write_generic(replace(release, values=values), tmp_path / "release")
    ratings = read_release(folder)
    assert ratings.values.max() == MAX_RATING and ratings.values.min() == -MAX_RATING
    with deadline(60):
        data = prepare(ratings, replace(TINY, als_reg=AUTO))
    for name in ("test_users", "train_users", "test_items", "prior_means", "prior_covariances"):
        assert np.isfinite(getattr(data, name)).all(), name


@pytest.mark.slow
def test_overflowing_ratings_through_the_command_line(tmp_path: Path) -> None:
    """What the reader refuses (in CI: above), ``nslb data prepare`` and ``nslb run`` refuse
    in its one line, caching nothing."""
    release, _ = ratings_with(3e7)
    folder = write_generic(release, tmp_path / "release")
    options = [f"env.data_dir={folder}", f"env.cache_dir={tmp_path / 'cache'}",
               "env.min_user_ratings=20", "env.min_item_ratings=30", "env.rank=3",
               "env.n_states=3"]  # fmt: skip
    prepared = nslb("data", "prepare", *options, cwd=tmp_path)
    message = assert_refused(prepared, "env.data_dir", tmp_path)
    assert str(folder / "ratings.csv") in message and "found 3e+07" in message
    run = nslb("run", "env=movielens", *options, "env.n_arms=6", *QUICK, cwd=tmp_path)
    assert assert_refused(run, "env.data_dir", tmp_path, written=True) == message
    assert not list((tmp_path / "cache").rglob("*.npz")), "nothing cached"


def overflowing(scale: float) -> Ratings:
    """The tiny release scaled past ALS' float32 range, bypassing the reader's check (as any
    caller of prepare() could), without genres."""
    release = tiny_release()
    values = (release.values * scale).astype(np.float32)
    no_genres = np.zeros((0, 0), dtype=bool)
    return Ratings(release.users, release.items, values, release.items[:0], no_genres, ())


def test_als_on_overflowing_ratings_stops_at_once_naming_the_data(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With a fixed penalty and with the search for one."""
    ratings = overflowing(1e19)  # squares of 5e19 overflow float32: NaN factors
    calls: list[float] = []
    import nslb_cli.data.prepare as module

    def counted(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        calls.append(args[5])
        return als(*args, **kwargs)

    monkeypatch.setattr(module, "als", counted)
    for als_reg in (1.0, AUTO):
        calls.clear()
        with deadline(30), pytest.raises(DataError) as refused:
            prepare(ratings, replace(TINY, als_reg=als_reg))
        assert refused.value.key == "env.data_dir"
        assert "ratings as large as 5e+19" in str(refused.value)
        # the search scores each grid point at most once (two fits: one per half), then the
        # final fits of both halves: whichever fit overflows first stops everything
        assert 1 <= len(calls) <= 2 * len(GRID) + 2, als_reg
        assert all(calls.count(reg) <= 4 for reg in calls), als_reg


def test_als_refuses_a_singular_system_and_a_penalty_beyond_float32() -> None:
    users, items = np.array([0, 0, 1]), np.array([0, 1, 1])
    values = np.array([4.0, 3.0, 5.0])
    rng = np.random.default_rng(0)
    # row 2 has no rating: its Gram matrix is 0, and a penalty of 1e-46 is 0 in float32
    with pytest.raises(DataError) as singular:
        als(users, items, values, (3, 2), 2, 1e-46, 3, rng)
    assert singular.value.key == "env.als_reg" and "singular" in str(singular.value)
    for reg in (1e39, math.inf, math.nan, 0.0):
        with pytest.raises(DataError) as beyond:
            als(users, items, values, (3, 2), 2, reg, 3, rng)
        assert beyond.value.key == "env.als_reg"


def test_a_fixed_penalty_that_zeroes_every_factor_is_refused(tmp_path: Path) -> None:
    ratings = read_release(write_csv(tiny_release(), tmp_path / "release"))
    assert np.isfinite(prepare(ratings, replace(TINY, als_reg=10.0)).prior_means).all()
    with pytest.raises(DataError) as refused:
        prepare(ratings, replace(TINY, als_reg=1e4))  # float32 underflow: exact zeros
    assert refused.value.key == "env.als_reg"
    assert "shrinks the factors to nothing" in str(refused.value)


def test_hill_climb_stops_in_one_line_on_a_nan_score() -> None:
    calls: list[float] = []

    def nan(reg: float) -> float:
        calls.append(reg)
        return math.nan

    with deadline(10), pytest.raises(DataError) as refused:
        hill_climb(nan, GRID.index(10.0))
    assert refused.value.key == "env.als_reg" and "not a finite number" in str(refused.value)
    assert len(calls) == 1


def test_hill_climb_stops_on_a_non_finite_score_met_on_the_way() -> None:
    """Falling scores, then a non-finite one three points down: the search has moved
    twice, then stops at the first non-finite score."""
    start = GRID.index(10.0)
    for bad in (math.nan, math.inf, -math.inf):
        calls: list[float] = []

        def falling(reg: float, bad: float = bad, calls: list[float] = calls) -> float:
            calls.append(reg)
            return bad if GRID.index(reg) == start - 3 else reg

        with deadline(10), pytest.raises(DataError):
            hill_climb(falling, start)
        assert len(calls) == len(set(calls)) <= len(GRID), bad
        assert calls[-1] == GRID[start - 3], bad


def test_hill_climb_ends_within_the_grid_for_any_finite_scores() -> None:
    """Random score curves (ties and plateaus included) from random starts: at most
    len(GRID) scores, each grid point once, ending at a local minimum of what it saw."""
    rng = np.random.default_rng(7)
    with deadline(20):
        for trial in range(500):
            table = rng.integers(0, 4 if trial % 2 else 1000, len(GRID)).astype(float)
            calls: list[float] = []

            def score(reg: float, table: np.ndarray = table, calls: list = calls) -> float:
                calls.append(reg)
                return float(table[GRID.index(reg)])

            scores = hill_climb(score, int(rng.integers(len(GRID))))
            assert len(calls) == len(set(calls)) <= len(GRID)
            lowest = min(scores.values())
            checked = [  # lowest points whose every neighbour was scored, and no lower
                k
                for k, reg in enumerate(GRID)
                if scores.get(reg) == lowest
                and all(
                    GRID[j] in scores and scores[GRID[j]] >= lowest
                    for j in (k - 1, k + 1)
                    if 0 <= j < len(GRID)
                )
            ]
            assert checked, "the search stopped before confirming a local minimum"


def test_the_penalty_search_ends_in_one_line_when_every_score_is_nan(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A held-out error that is NaN (as ALS' NaN factors once gave) ends the search after
    one score (two fits: one per half), instead of bouncing forever."""
    fits: list[float] = []

    def nan_error(self: Search, s: object, reg: float, purpose: int) -> float:
        fits.append(reg)
        return math.nan

    monkeypatch.setattr(Search, "squared_error", nan_error)
    with deadline(30), pytest.raises(DataError) as refused:
        choose_penalty(factorisable_halves(1.0), SEARCH, scale=4.0)
    assert refused.value.key == "env.als_reg"
    assert len(fits) == 2 and len(set(fits)) == 1
