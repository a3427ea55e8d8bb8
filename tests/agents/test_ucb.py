"""SW-mUCB (Algorithm 4) and SW-umUCB: consistent sets, fallback, the slack epsilon."""

from __future__ import annotations

import numpy as np
import pytest

from nslb_cli.agents import AGENTS
from nslb_cli.config.validators import ConfigError
from nslb_cli.core.rng import BatchRNG
from nslb_cli.envs.synthetic import SyntheticParams
from nslb_cli.runner.simulate import build_agent
from tests.helpers.agents import agent_params, run_agent
from tests.helpers.worlds import hand_made_world, synthetic_world


def test_true_state_is_consistent_away_from_change_points() -> None:
    # Exact model, a change every 200 rounds, tau = 100. Rounds whose whole window lies in
    # one segment ((t mod 200) >= tau) are the set T of the paper's appendix, where the
    # true state leaves C_t only if the concentration event E fails; its Proposition 3 bounds
    # P(E fails in a run) by 2 S / n = 0.005. Over 60 runs, P(3 or more runs fail) < 0.004
    # (binomial tail), so at most 2 runs may ever drop the true state there.
    env = SyntheticParams(dynamics="fixed", period=200, horizon=2000)
    trace = run_agent("sw_mucb", np.arange(60), env)
    away = (np.arange(env.horizon) % env.period) >= 100
    consistent = trace.p_true_state[:, away] > 0  # the belief is uniform over C_t
    assert (~consistent).any(axis=1).sum() <= 2


def test_known_model_makes_sw_umucb_sw_mucb() -> None:
    # epsilon = null is the largest prior sd of the means: 0 for a known model.
    env = SyntheticParams(horizon=400, switch_prob=0.02)
    plain = run_agent("sw_mucb", [0, 1, 2], env)
    slack = run_agent("sw_umucb", [0, 1, 2], env)
    np.testing.assert_array_equal(plain.action, slack.action)
    np.testing.assert_array_equal(plain.belief, slack.belief)


@pytest.mark.parametrize(("epsilon", "expected"), [(None, 0.2), (0.05, 0.05)])
def test_epsilon_defaults_to_the_prior_sd(epsilon: float | None, expected: float) -> None:
    world = synthetic_world([0, 1], model="prior", prior_sd=0.2, horizon=10)
    params = agent_params("sw_umucb", epsilon=epsilon)
    agent = build_agent(AGENTS["sw_umucb"], params, world, BatchRNG([0, 1]))
    np.testing.assert_allclose(agent.epsilon, expected)


def test_no_consistent_state_falls_back_to_all_and_is_counted() -> None:
    # The model over-predicts every arm by >= 0.8 in every state: a state's gap grows by
    # about 0.8 per round it is believed, past the radius 0.5 sqrt(6 N log 300) = 2.9 sqrt(N)
    # once N >~ 14, so after ~30 rounds no state is ever consistent.
    runs, horizon = 3, 300
    model = np.array([[1.0, 0.9], [0.8, 1.0]])
    states = np.zeros((runs, horizon), dtype=np.int64)
    world = hand_made_world(np.zeros((2, 2)), states, model, sigma=0.5, seed=4)
    agent = build_agent(AGENTS["sw_mucb"], agent_params("sw_mucb"), world, BatchRNG(range(runs)))
    for t in range(horizon):
        actions = agent.act(t, None)
        np.testing.assert_allclose(agent.belief().posterior.sum(axis=1), 1.0)
        agent.update(t, None, actions, world.reward(t, actions))
    assert not agent.consistent_states().any()
    np.testing.assert_allclose(agent.belief().posterior, 0.5)  # uniform over all states
    assert np.all(agent.summary()["fallbacks"] > horizon - 60)


def test_an_over_predicting_state_is_eliminated() -> None:
    # Nearly noise-free; the truth is state 1. Round 1 is optimistic over all states and
    # believes state 0 (arm 0, predicted 1.0), which pays 0.0: G(0) = 1 > sigma sqrt(6 log n),
    # so state 0 leaves C and round 2 plays state 1's best arm.
    means = np.array([[1.0, 0.0], [0.0, 0.6]])
    world = hand_made_world(means, np.ones((1, 20), dtype=np.int64), means, sigma=1e-9)
    agent = build_agent(AGENTS["sw_mucb"], agent_params("sw_mucb"), world, BatchRNG([0]))
    first = agent.act(0, None)
    assert first.tolist() == [0] and agent.belief().state.tolist() == [0]
    agent.update(0, None, first, world.reward(0, first))
    assert agent.consistent_states().tolist() == [[False, True]]
    assert agent.act(1, None).tolist() == [1]


@pytest.mark.parametrize(
    ("name", "overrides", "key"),
    [
        ("sw_mucb", {"tau": 0}, "tau"),
        ("sw_umucb", {"tau": -3}, "tau"),
        ("sw_umucb", {"epsilon": -0.1}, "epsilon"),
    ],
)
def test_invalid_parameters_name_the_field(name: str, overrides: dict, key: str) -> None:
    with pytest.raises(ConfigError, match=f"^{key}:"):
        agent_params(name, **overrides)


def test_bernoulli_radius_uses_the_sub_gaussian_constant_one_half() -> None:
    world = synthetic_world([0], reward="bernoulli", sigma=2.0)
    agent = build_agent(AGENTS["sw_mucb"], agent_params("sw_mucb"), world, BatchRNG([0]))
    assert agent.radius == pytest.approx(0.5 * np.sqrt(6 * np.log(2000)))
