"""env=piecewise: the table of means and change points, its states, its noise, its presets."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from nslb_cli.common.errors import ConfigError
from nslb_cli.envs.piecewise import Piecewise, PiecewiseParams
from nslb_cli.runner.compose import load
from tests.helpers.cli import nslb

SEEDS = np.arange(4)


def test_each_round_has_its_segments_means_and_repeated_rows_share_a_state() -> None:
    means = [[0.2, 0.8], [0.9, 0.1], [0.2, 0.8]]  # the third segment returns to the first
    p = PiecewiseParams(means=means, change_points=[0, 3, 7], horizon=10)
    assert (p.n_arms, p.n_states) == (2, 2)
    world = Piecewise.build(p, SEEDS)
    expected = np.array([means[0]] * 3 + [means[1]] * 4 + [means[2]] * 3)
    assert np.array_equal(world.mean_rewards[2], expected)
    assert np.array_equal(world.states[0], [0, 0, 0, 1, 1, 1, 1, 0, 0, 0])
    assert (world.states == world.states[0]).all(), "the path is the same for every seed"
    model = world.offline_model
    assert np.array_equal(model.means[1], [[0.2, 0.8], [0.9, 0.1]])
    assert not model.mean_sd.any() and model.concentration is None
    assert np.allclose(model.transitions.sum(axis=2), 1.0)
    assert np.isclose(1 - model.transitions[0, 0, 0], 2 / 10), "Υ changes in n rounds"


def test_bernoulli_rewards_are_clicks_with_the_segment_means_over_seeds() -> None:
    p = PiecewiseParams(means=[[0.1, 0.7]], change_points=[0], horizon=4000)
    world = Piecewise.build(p, np.arange(50))
    arm = np.zeros(50, dtype=np.int64) + 1
    clicks = np.stack([world.reward(t, arm) for t in range(4000)])
    assert set(np.unique(clicks)) <= {0.0, 1.0}
    se = np.sqrt(0.7 * 0.3 / clicks.size)
    assert abs(clicks.mean() - 0.7) < 4 * se
    other = Piecewise.build(p, np.arange(2, 6))
    assert np.array_equal(other.noise[0], world.noise[2]), "a seed's noise is its own"


def test_gaussian_rewards_scatter_by_sigma() -> None:
    p = PiecewiseParams(reward="gaussian", sigma=0.3, means=[[0.5, 0.6]], change_points=[0],
                        horizon=5000)  # fmt: skip
    world = Piecewise.build(p, np.arange(20))
    assert world.problem.sigma == 0.3
    assert abs(world.noise.std() - 0.3) < 4 * 0.3 / np.sqrt(2 * world.noise.size)


@pytest.mark.parametrize("mark", [b"", b"\xef\xbb\xbf"], ids=["plain", "byte-order mark"])
def test_a_csv_table_gives_the_same_world(tmp_path: Path, mark: bytes) -> None:
    """Excel's "CSV UTF-8" starts the table with a byte-order mark: the same world."""
    table = tmp_path / "problem.csv"
    table.write_bytes(mark + b"start,a,b,c\n0,0.3,0.5,0.9\n1000,0.3,0.2,0.9\n2000,0.3,0.2,0.1\n"
                      b"3000,0.7,0.2,0.1\n4000,0.7,0.5,0.1\n")  # fmt: skip
    from_file = Piecewise.build(PiecewiseParams(table=str(table)), SEEDS)
    default = Piecewise.build(PiecewiseParams(), SEEDS)
    assert np.array_equal(from_file.mean_rewards, default.mean_rewards)


@pytest.mark.parametrize(
    ("values", "key"),
    [
        ({"means": [[0.5, 1.5]], "change_points": [0]}, "means"),  # not a probability
        ({"means": [[0.5, 0.4]], "change_points": [0, 10]}, "change_points"),
        ({"means": [[0.5, 0.4], [0.1, 0.2]], "change_points": [5, 10]}, "change_points"),
        ({"means": [[0.5, 0.4], [0.1, 0.2]], "change_points": [0, 6000]}, "change_points"),
        ({"means": [[0.5]], "change_points": [0]}, "means"),
        ({"n_arms": 4}, "n_arms"),
    ],
)
def test_an_inconsistent_table_is_refused_naming_the_key(values: dict, key: str) -> None:
    with pytest.raises(ConfigError) as caught:
        PiecewiseParams(**values)
    assert caught.value.key == key


@pytest.mark.parametrize("problem", [1, 2, 3, 4])
def test_the_presets_are_besson_et_als_problems(problem: int) -> None:
    config = load([f"env=piecewise/problem_{problem}"])
    env = config.env
    assert env.name == "piecewise" and env.reward == "bernoulli" and env.horizon == 5000
    assert env.n_arms == 3 and len(env.change_points) == len(env.means) in (4, 5)


def test_each_problem_gets_its_own_folder(tmp_path: Path) -> None:
    problems = "env=piecewise/problem_1,piecewise/problem_2"
    done = nslb("run", "-m", problems, "agent=mts", "run.n_seeds=2", "run.progress=false",
                "hydra.sweep.dir=s", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert {p.parent.parent.name for p in (tmp_path / "s").rglob("seed=0.csv")} == {
        "problem_1",
        "problem_2",
    }


def test_a_table_skips_blank_lines_and_names_a_bad_row_by_its_line(tmp_path: Path) -> None:
    """A table ending in a blank line (as editors save it) is read; a bad row is refused
    naming its line (a blank line was refused without one)."""
    table = tmp_path / "problem.csv"
    table.write_text("start,a,b\n0,0.3,0.5\n\n100,0.6,0.2\n\n")
    read = Piecewise.build(PiecewiseParams(table=str(table), horizon=200), SEEDS)
    assert read.mean_rewards[0, 150].tolist() == [0.6, 0.2]
    table.write_text("start,a,b\n0,0.3,0.5\n100,0.6,x\n")
    with pytest.raises(ConfigError, match=r"line 3: expected a round and numbers, got 100,0.6,x"):
        PiecewiseParams(table=str(table), horizon=200)
    table.write_text("start,a,b\n0,0.3,0.5\n100,0.6\n")
    with pytest.raises(ConfigError, match=r"line 3: 1 means for the header's 2 arms"):
        PiecewiseParams(table=str(table), horizon=200)
