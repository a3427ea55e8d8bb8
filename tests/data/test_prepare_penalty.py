"""``als_reg: auto``: the ALS penalty chosen on a grid by held-out RMSE, then refitted."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from nslb_cli.data.prepare import (
    AUTO,
    GRID,
    Half,
    Settings,
    choose_penalty,
    hill_climb,
    penalty_score,
    prepare,
    split,
    start_index,
)
from nslb_cli.data.ratings import read_release
from tests.helpers.movielens import TINY as TINY_FIXED
from tests.helpers.movielens import tiny_release, write_csv

SEARCH = Settings(
    min_user_ratings=1,
    min_item_ratings=1,
    rank=3,
    als_reg=AUTO,
    als_iterations=20,
    n_states=2,
    data_seed=0,
)


def factorisable_halves(noise: float, seed: int = 0) -> tuple[Half, Half]:
    """Both halves of a 70 × 50 rank-2 matrix plus 3 (rank 3 without bias terms), 60 %
    observed, with Gaussian noise of SD ``noise``."""
    rng = np.random.default_rng(seed)
    truth = 3 + rng.normal(0, 1, (70, 2)) @ rng.normal(0, 1, (50, 2)).T
    users, items = np.nonzero(rng.random(truth.shape) < 0.6)
    values = (truth[users, items] + rng.normal(0, noise, len(users))).astype(np.float32)
    everything = Half(users.astype(np.int32), items.astype(np.int32), values)
    train = split(len(values), np.random.default_rng(seed))
    return everything.take(train), everything.take(~train)


def test_auto_picks_the_best_penalty_of_the_whole_grid() -> None:
    """The search visits a few grid points; every grid point is scored here to check that
    it found the grid's best (and that the best moves with the noise, so it is not luck)."""
    bests = []
    for noise in (1.0, 4.0):
        halves = factorisable_halves(noise)
        score = penalty_score(halves, SEARCH)[0]
        curve = {reg: score(reg) for reg in GRID}
        best = min(curve, key=curve.__getitem__)
        result = choose_penalty(halves, SEARCH, scale=4.0)
        assert result["chosen"] == best, noise
        assert result["validation_rmse"] == pytest.approx(curve[best], abs=1e-4)
        assert len(result["searched"]) < len(GRID) / 2, "a local search, not the whole grid"
        for reg, rmse in result["searched"]:
            assert rmse == pytest.approx(curve[reg], abs=1e-4)
        assert GRID[0] < best < GRID[-1]
        assert curve[best] < 0.97 * min(curve[GRID[0]], curve[GRID[-1]]), "a real optimum"
        bests.append(best)
    less, more = bests
    assert less < 10 < more, "less noise: less penalty than the search's start; more: more"


def test_hill_climb_walks_to_the_minimum_and_stops_at_the_ends() -> None:
    calls = []

    def bowl(reg: float) -> float:
        calls.append(reg)
        return (np.log2(reg / 10) - 3) ** 2  # minimum at 80 = GRID[9]

    scores = hill_climb(bowl, GRID.index(10.0))
    assert min(scores, key=scores.__getitem__) == 80.0
    assert sorted(calls) == sorted(set(calls)), "each grid point scored once"
    assert sorted(scores) == [5.0, 10.0, 20.0, 40.0, 80.0, 160.0]
    falling = hill_climb(lambda reg: -reg, 3)
    assert max(falling) == GRID[-1]
    rising = hill_climb(lambda reg: reg, 3)
    assert min(rising) == GRID[0]


def test_search_starts_at_ten_for_stars_and_scales_with_the_ratings() -> None:
    assert GRID[start_index(4.0)] == 10.0  # 1–5 stars
    assert GRID[start_index(4.5)] == 10.0  # 0.5–5 stars
    assert GRID[start_index(100.0)] == 320.0  # 0–100 points: 10 · 25 = 250 -> 320
    assert GRID[start_index(0.0)] == 10.0


@pytest.fixture(scope="module")
def ratings(tmp_path_factory: pytest.TempPathFactory):
    return read_release(write_csv(tiny_release(), tmp_path_factory.mktemp("release")))


TINY = replace(TINY_FIXED, als_reg=AUTO)  # the tiny release's settings, penalty searched


def test_auto_refits_the_whole_half_at_the_chosen_penalty(ratings) -> None:
    """The factors of ``auto`` are exactly those of the number it chose."""
    auto = prepare(ratings, TINY)
    penalty = auto.diagnostics["penalty"]
    assert penalty["mode"] == AUTO and penalty["chosen"] in GRID
    assert penalty["held_out"] == pytest.approx(0.1 * auto.diagnostics["filtered"]["ratings"], 1)
    fixed = prepare(ratings, replace(TINY, als_reg=penalty["chosen"]))
    assert fixed.diagnostics["penalty"] == {"mode": "fixed", "value": penalty["chosen"]}
    for name in ("test_users", "test_items", "train_users", "train_items", "test_labels"):
        np.testing.assert_array_equal(getattr(auto, name), getattr(fixed, name), name)


def test_the_cache_key_names_the_search(tmp_path: Path) -> None:
    auto, fixed = TINY.key(), replace(TINY, als_reg=10.0).key()
    assert auto["auto"]["grid"] == list(GRID) and auto["auto"]["validation_share"] == 0.1
    assert "auto" not in fixed and fixed["als_reg"] == 10.0
