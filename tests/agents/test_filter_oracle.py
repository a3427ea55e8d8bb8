"""The filter oracle: every round, the greedy arm under the exact belief of the true model,
against a forward pass written here; refused where the agents are not told the true model."""

from __future__ import annotations

import numpy as np
import pytest

from nslb_cli.agents.filter_oracle import FilterOracle, FilterOracleParams
from nslb_cli.bandit.rng import BatchRNG
from nslb_cli.common.errors import ConfigError
from nslb_cli.envs.switching_latent import SwitchingLatent, SwitchingLatentParams
from nslb_cli.runner.compose import load
from nslb_cli.runner.simulate import simulate


def test_each_round_plays_the_greedy_arm_under_the_exact_belief() -> None:
    world = SwitchingLatent.build(SwitchingLatentParams(horizon=300), np.arange(4))
    model, problem = world.offline_model, world.problem
    agent = FilterOracle(FilterOracleParams(), problem, model, BatchRNG(range(4)))
    trace = simulate(world, agent, progress=False)
    outcomes = problem.reward_model.outcome(trace.reward)  # type: ignore[union-attr]
    laws, P, means = model.emissions, model.transitions, model.means
    assert laws is not None
    for r in range(4):
        belief = np.full(problem.n_states, 1.0 / problem.n_states)
        for t in range(problem.horizon):
            assert trace.action[r, t] == np.argmax(belief @ means[r]), (r, t)
            assert trace.belief[r, t] == np.argmax(belief)
            assert trace.p_true_state[r, t] == pytest.approx(belief[world.states[r, t]], 1e-9)
            seen = belief * laws[r, :, trace.action[r, t], outcomes[r, t]]
            belief = seen @ P[r] / seen.sum()  # P[i, j] = p(j | i): a row-stochastic chain


@pytest.mark.parametrize(
    "env", [["env=synthetic", "env.model=prior"], ["env=synthetic", "env.dynamics=fixed"],
            ["env=piecewise"], ["env=switching_latent", "env.model=learned"]],
)  # fmt: skip
def test_it_is_refused_where_the_agents_are_not_told_the_true_model(env: list[str]) -> None:
    with pytest.raises(ConfigError, match="filter_oracle needs the true model"):
        load([*env, "agent=filter_oracle"])
