"""Exp3.S and Exp4.S: the sampling distribution, the default tuning, concentration, and a
round held to the module's equations number for number."""

from __future__ import annotations

import numpy as np
import pytest

from nslb_cli.agents import AGENTS
from nslb_cli.agents.exp import ExponentialWeights
from nslb_cli.bandit.rng import BatchRNG
from nslb_cli.common.errors import ConfigError
from nslb_cli.runner.simulate import build_agent, simulate
from tests.helpers.agents import agent_params
from tests.helpers.worlds import hand_made_world, linear_world, synthetic_world


@pytest.mark.parametrize("overrides", [{}, {"gamma": 0.05, "alpha": 0.01}], ids=["auto", "set"])
@pytest.mark.parametrize("name", ["exp3s", "exp4s"])
def test_probabilities_are_bounded_below_and_sum_to_one(name: str, overrides: dict) -> None:
    world = synthetic_world([0, 1, 2, 3], dynamics="fixed", period=50, horizon=300)
    agent = build_agent(
        AGENTS[name], agent_params(name, **overrides), world, BatchRNG([0, 1, 2, 3])
    )
    floor = agent.gamma[:, None] / world.problem.n_arms
    for t in range(world.problem.horizon):
        actions = agent.act(t, None)
        p = agent.probabilities
        assert np.all(p >= floor * (1 - 1e-12))
        np.testing.assert_allclose(p.sum(axis=1), 1.0, rtol=0, atol=1e-12)
        agent.update(t, None, actions, world.reward(t, actions))
        np.testing.assert_allclose(agent.weights.sum(axis=1), 1.0, rtol=0, atol=1e-12)


def test_default_tuning_is_auer_et_al_for_the_expected_changes() -> None:
    # Paper setting: K = N = 5, n = 2000, switch probability 0.005, so S = 10 changes;
    # gamma = sqrt(K (S ln(N n) + e) / ((e - 1) n)) and alpha = 1 / n.
    world = synthetic_world([0])
    agent = build_agent(AGENTS["exp4s"], agent_params("exp4s"), world, BatchRNG([0]))
    expected = np.sqrt(5 * (10 * np.log(5 * 2000) + np.e) / ((np.e - 1) * 2000))
    assert agent.gamma[0] == pytest.approx(expected)
    assert agent.alpha[0] == pytest.approx(1 / 2000)


@pytest.mark.parametrize("gamma", [0.1, 0.02])
@pytest.mark.parametrize("name", ["exp3s", "exp4s"])
def test_concentrates_on_the_best_expert_without_sharing(name: str, gamma: float) -> None:
    # Stationary: state s* = run % 3 throughout. State s's best arm is arm s (mean 0.8, the
    # others 0.2), so expert s* (exp4s) or arm s* (exp3s) is the best expert, and the others
    # recommend arms 0.6 worse. With rewards mapped by [0, 1] itself, the log-weight of the
    # best expert gains gamma / K * 0.6 per round over each other in expectation: >= 8 after
    # 2000 rounds even for gamma = 0.02, i.e. weight > 0.999 up to noise.
    runs, horizon, K = 6, 2000, 3
    means = 0.2 + 0.6 * np.eye(K)
    states = np.repeat(np.arange(runs)[:, None] % K, horizon, axis=1)
    world = hand_made_world(means, states, means, sigma=0.1, seed=3)
    params = agent_params(name, gamma=gamma, alpha=0.0, reward_low=0.0, reward_high=1.0)
    agent = build_agent(AGENTS[name], params, world, BatchRNG(range(runs)))
    simulate(world, agent, progress=False)
    best = states[:, -1]
    assert np.all(agent.weights[np.arange(runs), best] > 0.99)
    # Playing the best arm with probability (1 - gamma) w* + gamma / K -> 1 - gamma (K-1)/K.
    p_best = agent.probabilities[np.arange(runs), best]
    assert np.all(p_best > 1 - gamma * (K - 1) / K - 0.01)


def test_fixed_share_keeps_every_expert_alive() -> None:
    # With alpha > 0 every weight is at least e alpha / N / (1 + e alpha) after any round
    # (the share added before normalising, the normaliser being at most e + e alpha by
    # the bound exp(gamma y / K) <= e): the property that lets Exp3.S track a switch.
    runs, horizon, K, alpha = 3, 500, 3, 0.01
    means = 0.2 + 0.6 * np.eye(K)
    states = np.zeros((runs, horizon), dtype=np.int64)
    world = hand_made_world(means, states, means, sigma=0.1)
    params = agent_params("exp3s", gamma=0.3, alpha=alpha, reward_low=0.0, reward_high=1.0)
    agent = build_agent(AGENTS["exp3s"], params, world, BatchRNG(range(runs)))
    simulate(world, agent, progress=False)
    assert agent.weights.min() >= np.e * alpha / K / (np.e * (1 + alpha))


@pytest.mark.parametrize(
    ("overrides", "key"),
    [
        ({"gamma": 0.0}, "gamma"),
        ({"gamma": 1.5}, "gamma"),
        ({"alpha": -0.1}, "alpha"),
        ({"reward_low": 1.0, "reward_high": 0.0}, "reward_high"),
    ],
)
def test_invalid_parameters_name_the_field(overrides: dict, key: str) -> None:
    with pytest.raises(ConfigError, match=f"^{key}:"):
        agent_params("exp4s", **overrides)


def test_exp4s_belief_is_the_expert_weights() -> None:
    world = synthetic_world([5], horizon=50)
    agent = build_agent(AGENTS["exp4s"], agent_params("exp4s"), world, BatchRNG([5]))
    agent.act(0, None)
    belief = agent.belief()
    np.testing.assert_array_equal(belief.posterior, agent.weights)
    assert belief.state[0] == agent.weights[0].argmax()


@pytest.mark.parametrize("name", ["exp3s", "exp4s"])
def test_bernoulli_rewards_are_used_as_they_are(name: str) -> None:
    """Clicks are already in [0, 1]: the map to [0, 1] is the identity."""
    world = synthetic_world([0, 1], reward="bernoulli", horizon=40)
    agent = build_agent(AGENTS[name], agent_params(name), world, BatchRNG([0, 1]))
    for t in range(40):
        actions = agent.act(t, None)
        rewards = world.reward(t, actions)
        np.testing.assert_array_equal(agent.reward_range[0], 0.0)
        np.testing.assert_array_equal(agent.reward_range[1], 1.0)
        np.testing.assert_array_equal(agent.unit_rewards(rewards), rewards)
        agent.update(t, None, actions, rewards)


def exp_agent(name: str, runs: int) -> ExponentialWeights:
    """``name`` on the synthetic prior model, its weights drawn at random (normalised, of
    orders of magnitude apart)."""
    world = synthetic_world(list(range(runs)), model="prior")
    agent = build_agent(AGENTS[name], agent_params(name), world, BatchRNG(range(runs)))
    weights = np.random.default_rng(5).dirichlet(np.full(agent.n_experts, 0.3), runs)
    agent.weights = weights
    return agent


@pytest.mark.parametrize("name", ["exp3s", "exp4s"])
def test_a_round_is_the_statement_of_the_module_to_the_last_bit(name: str) -> None:
    """p(a) = (1 - gamma) sum_i w_i 1{xi_i = a} + gamma / K (summed in expert order) and
    w_i <- w_i exp(gamma / K · 1{xi_i = A_t} x_t / p(A_t)) + e alpha / N, normalised, as
    written, number for number."""
    runs = 500
    agent = exp_agent(name, runs)
    weights, K = agent.weights.copy(), agent.problem.n_arms
    advice = agent.recommended
    if name == "exp4s":  # 3 or more experts share an arm: the order of the sum matters
        shared = np.stack([(advice == a).sum(axis=1) for a in range(K)], axis=1).max(axis=1)
        assert (shared >= 3).sum() > 100
    mixture = np.zeros((runs, K))
    for i in range(agent.n_experts):
        mixture[np.arange(runs), advice[:, i]] += weights[:, i]
    actions = agent.act(0, None)
    p = (1.0 - agent.gamma[:, None]) * mixture + (agent.gamma / K)[:, None]
    np.testing.assert_array_equal(agent.probabilities, p)
    low, high = agent.reward_range
    rewards = np.random.default_rng(6).uniform(low - 0.5, high + 0.5)  # clipped at both ends
    agent.update(0, None, actions, rewards)
    x = np.clip((rewards - low) / (high - low), 0.0, 1.0)
    estimates = (advice == actions[:, None]) * (x / p[np.arange(runs), actions])[:, None]
    expected = (
        weights * np.exp((agent.gamma / K)[:, None] * estimates)
        + (np.e * agent.alpha / agent.n_experts)[:, None]
    )
    np.testing.assert_array_equal(agent.weights, expected / expected.sum(axis=1, keepdims=True))


def test_exp4s_follows_the_contexts_of_each_round() -> None:
    # A linear model: the advice (each state's best arm) and the reward range change with
    # the contexts of the round.
    world = linear_world(horizon=30)
    agent = build_agent(AGENTS["exp4s"], agent_params("exp4s"), world, BatchRNG([0]))
    advice, ranges = set(), set()
    for t in range(30):
        contexts = world.context(t)
        actions = agent.act(t, contexts)
        means = world.offline_model.expected_rewards(contexts)
        np.testing.assert_array_equal(agent.recommended, means.argmax(axis=2))
        assert agent.reward_range[1] == means.max() + 2 * 0.5  # sigma = 0.5
        advice.add(tuple(agent.recommended[0]))
        ranges.add(float(agent.reward_range[0][0]))
        agent.update(t, contexts, actions, world.reward(t, actions))
    assert len(advice) > 3 and len(ranges) > 5
