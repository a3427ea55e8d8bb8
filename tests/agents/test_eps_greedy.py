"""eps_greedy: how often it explores, what it exploits, on every per-arm environment."""

from __future__ import annotations

import numpy as np
import pytest

from nslb_cli.agents.eps_greedy import EpsGreedyParams, EpsilonGreedy
from nslb_cli.bandit.problem import OfflineModel, Problem
from nslb_cli.bandit.rng import BatchRNG
from nslb_cli.envs.piecewise import Piecewise, PiecewiseParams
from nslb_cli.envs.switching_latent import SwitchingLatent, SwitchingLatentParams
from nslb_cli.runner.simulate import simulate


def _agent(epsilon: float, runs: int = 50, arms: int = 4) -> EpsilonGreedy:
    problem = Problem(n_arms=arms, n_states=1, horizon=100, sigma=0.5, n_runs=runs)
    model = OfflineModel(np.zeros((runs, 1, arms)), np.zeros((runs, 1, arms)),
                         np.ones((runs, 1, 1)), None, np.ones((runs, 1)))  # fmt: skip
    return EpsilonGreedy(EpsGreedyParams(epsilon=epsilon), problem, model, BatchRNG(range(runs)))


def test_it_explores_a_fraction_epsilon_of_rounds_with_uniform_arms() -> None:
    agent = _agent(0.3)
    agent.sums[:] = [0.0, 0.0, 5.0, 0.0]
    agent.pulls[:] = 1.0
    arms = np.stack([agent.act(t, None) for t in range(2000)])
    rate = agent.explorations.mean() / 2000
    assert abs(rate - 0.3) < 4 * np.sqrt(0.3 * 0.7 / (50 * 2000))
    share = (arms == 0).mean()  # arm 0 only when exploring: 0.3 / 4 of the rounds
    assert abs(share - 0.075) < 4 * np.sqrt(0.075 * 0.925 / arms.size)


def test_without_exploration_it_tries_every_arm_then_plays_the_best_mean() -> None:
    agent = _agent(0.0, runs=1, arms=3)
    means = np.array([0.2, 0.9, 0.5])
    played = []
    for t in range(6):
        a = agent.act(t, None)
        agent.update(t, None, a, means[a])
        played.append(int(a[0]))
    assert played == [0, 1, 2, 1, 1, 1]


@pytest.mark.parametrize("build", ["piecewise", "switching_latent"])
def test_it_learns_the_best_arm_of_a_stationary_problem(build: str) -> None:
    if build == "piecewise":
        world = Piecewise.build(PiecewiseParams(means=[[0.2, 0.8, 0.5]], change_points=[0],
                                                horizon=2000), np.arange(20))  # fmt: skip
    else:
        world = SwitchingLatent.build(
            SwitchingLatentParams(n_states=1, horizon=2000), np.arange(20)
        )
    agent = EpsilonGreedy(
        EpsGreedyParams(), world.problem, world.offline_model, BatchRNG(range(20))
    )
    regret = simulate(world, agent, progress=False).regret
    late, early = regret[:, -500:].mean(), regret[:, :100].mean()
    assert late < early / 2
