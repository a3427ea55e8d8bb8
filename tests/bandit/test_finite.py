"""A run whose numbers overflow ends in one line naming the parameter to lower, and
nothing of its batch is written."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from nslb_cli.agents.reference import RandomParams
from nslb_cli.bandit.finite import arithmetic, check_finite
from nslb_cli.bandit.trace import NO_BELIEF, Trace, check_decisions
from nslb_cli.common.errors import ConfigError
from nslb_cli.envs.switching_latent import SwitchingLatentParams
from nslb_cli.envs.synthetic import SyntheticParams
from tests.helpers.cli import nslb, said


def trace(reward: np.ndarray) -> Trace:
    """A trace of seeds 7 and 8 with these rewards, each its own best and expected reward."""
    shape = reward.shape
    return Trace(
        seeds=np.array([7, 8]),
        action=np.zeros(shape, dtype=np.int64),
        reward=reward,
        expected_reward=np.zeros(shape),
        optimal_reward=np.zeros(shape),
        state=np.zeros(shape, dtype=np.int64),
        belief=np.full(shape, NO_BELIEF),
        p_true_state=np.full(shape, np.nan),
    )


def test_a_number_that_is_not_finite_names_the_round_the_seed_and_what_to_lower() -> None:
    fine = np.ones((2, 3))
    check_finite(trace(fine), SyntheticParams())
    overflowed = fine.copy()
    overflowed[1, 2] = np.inf
    with pytest.raises(ConfigError) as refused:
        check_finite(trace(overflowed), SyntheticParams())
    assert str(refused.value) == (
        "env.sigma: its reward is inf in round 3 of seed 8: lower env.sigma or env.prior_sd"
    )
    summed = np.full((2, 3), 1e308)  # each finite, their sum not
    with pytest.raises(ConfigError, match=r"^env\.sigma: its cum_reward is inf in round 2 of"):
        check_finite(trace(summed), SyntheticParams())
    with pytest.raises(ConfigError) as refused:  # an environment that names no scale
        check_finite(trace(overflowed), SwitchingLatentParams())
    assert str(refused.value) == (
        "env: its reward is inf in round 3 of seed 8: lower the values of env 'switching_latent'"
    )


def test_a_belief_that_is_not_a_number_is_said_as_the_values_to_lower() -> None:
    broken = trace(np.ones((2, 3)))
    broken.belief[:], broken.p_true_state[:] = 0, 0.5
    broken.p_true_state[0, 1] = np.nan
    with pytest.raises(ConfigError) as refused, arithmetic(SyntheticParams(), RandomParams()):
        check_decisions(broken, n_arms=2, n_states=2)
    assert str(refused.value) == (
        "env.sigma: its probability of the true state in round 2 of seed 7 is nan, outside "
        "[0, 1]: lower env.sigma or env.prior_sd, or the values of agent 'random'"
    )


def test_an_overflowing_run_is_one_line_and_writes_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "out"
    options = ["env.sigma=1e300", "env.horizon=30", "run.n_seeds=2", "run.progress=false"]
    done = nslb("run", "agent=mts", *options, f"hydra.run.dir={folder}", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    (line,) = said(done.stderr)
    assert line.startswith("nslb: error: env.sigma: the run's arithmetic overflowed"), line
    assert line.endswith("lower env.sigma or env.prior_sd, or the values of agent 'mts'"), line
    assert not list(folder.glob("seed=*")) and not (folder / "config.yaml").exists()
