"""The baselines on env=movielens (contexts, linear model): valid play, batch invariance."""

from __future__ import annotations

import numpy as np
import pytest

from nslb_cli.common.errors import ConfigError
from nslb_cli.envs.movielens import MovieLensParams
from nslb_cli.runner.config import RunConfig, RunSettings
from nslb_cli.runner.job import simulate_seeds
from tests.helpers.agents import agent_params
from tests.helpers.movielens import tiny_env_params
from tests.helpers.results_tree import seed_frame


@pytest.fixture(scope="module")
def params(tmp_path_factory: pytest.TempPathFactory) -> MovieLensParams:
    return tiny_env_params(tmp_path_factory.mktemp("movielens"), horizon=200)


def run(params: MovieLensParams, agent: str, seeds: list[int], **overrides: object):
    config = RunConfig("test", params, agent_params(agent, **overrides), RunSettings())
    return simulate_seeds(config, np.asarray(seeds))


@pytest.mark.parametrize(
    ("agent", "overrides"),
    [
        ("exp4s", {}),
        ("sw_mucb", {}),
        ("sw_umucb", {"epsilon": 0.1}),
        ("cd_linucb", {}),
        ("cd_lints", {}),
        ("cd_linucb", {"threshold": 0.5}),  # restarts often: exercises the reset path
    ],
)
def test_baselines_play_movielens(params: MovieLensParams, agent: str, overrides: dict) -> None:
    trace = run(params, agent, [1, 2], **overrides)
    assert trace.action.min() >= 0 and trace.action.max() < params.n_arms
    assert np.all(trace.regret >= -1e-12)
    alone = run(params, agent, [2], **overrides)
    assert seed_frame(alone, 0).to_csv(index=False) == seed_frame(trace, 1).to_csv(index=False)


def test_sw_umucb_needs_an_explicit_epsilon_on_a_linear_model(params: MovieLensParams) -> None:
    with pytest.raises(ConfigError, match="^agent.epsilon:"):
        run(params, "sw_umucb", [1])
