"""Reward posteriors of umTS against closed forms."""

from __future__ import annotations

import numpy as np

from nslb_cli.agents import AGENTS
from nslb_cli.agents.posteriors import ArmPosterior, LinearPosterior
from nslb_cli.envs.synthetic import uniform_switching
from nslb_cli.models import OfflineModel, Problem
from nslb_cli.rng import BatchRNG
from nslb_cli.simulate import build_agent, simulate
from nslb_cli.world import World


def linear_world(
    horizon: int = 50, prior_scale: float = 0.3, n_states: int = 3, dim: int = 4, arms: int = 6
) -> World:
    """A one-run contextual world with linear rewards, built by hand (independent of envs/)."""
    rng = np.random.default_rng(42)
    theta = rng.normal(0, 1, (n_states, dim))
    features = rng.normal(0, 1, (40, dim))
    items = rng.integers(0, 40, (1, horizon, arms))
    transitions = uniform_switching(n_states, 0.05)
    states = np.zeros(horizon, dtype=np.int64)
    for t in range(1, horizon):
        states[t] = rng.choice(n_states, p=transitions[states[t - 1]])
    mean_rewards = (features[items[0]] @ theta.T)[np.arange(horizon), :, states][None]
    covariance = np.repeat((prior_scale**2 * np.eye(dim))[None], n_states, axis=0)
    model = OfflineModel(
        means=theta[None],
        mean_sd=np.zeros((1, n_states, 1)),
        transitions=transitions[None],
        concentration=None,
        initial=np.full((1, n_states), 1 / n_states),
        covariance=covariance[None],
    )
    problem = Problem(n_arms=arms, n_states=n_states, horizon=horizon, sigma=0.5, n_runs=1)
    noise = rng.normal(0, 0.5, (1, horizon))
    return World(problem, np.array([0]), states[None], mean_rewards, noise, model, items, features)


def test_recursive_updates_equal_batch_bayesian_linear_regression() -> None:
    """After n rewards: C_n = (C0^-1 + X'X / s2)^-1 and m_n = C_n (C0^-1 m0 + X'y / s2)."""
    world = linear_world(prior_scale=0.7)
    model = world.offline_model
    posterior = LinearPosterior(model, n_particles=2, noise_var=0.25)
    state = np.zeros((1, 2), dtype=np.int64)
    rng = np.random.default_rng(0)
    xs, ys = [], []
    for t in range(30):
        context = world.context(t)
        action = rng.integers(world.problem.n_arms, size=1)
        reward = rng.normal(1.0, 1.0, 1)
        posterior.observe(state, context, action, reward)
        xs.append(context[0, action[0]])
        ys.append(reward[0])
    x, y = np.array(xs), np.array(ys)
    prior_precision = np.linalg.inv(model.covariance[0, 0])
    cov = np.linalg.inv(prior_precision + x.T @ x / 0.25)
    mean = cov @ (prior_precision @ model.means[0, 0] + x.T @ y / 0.25)
    for particle in range(2):
        np.testing.assert_allclose(posterior.cov[0, particle, 0], cov, atol=1e-10)
        np.testing.assert_allclose(posterior.mean[0, particle, 0], mean, atol=1e-9)
    np.testing.assert_array_equal(posterior.mean[0, :, 1], model.means[0, 1][None].repeat(2, 0))


def test_linear_posterior_with_one_hot_features_is_the_arm_posterior() -> None:
    """Multi-armed = linear with X_t = identity: both families give the same numbers."""
    rng = np.random.default_rng(1)
    runs, states, arms = 2, 3, 4
    sd = rng.uniform(0.1, 0.5, (runs, states, arms))
    arm_model = OfflineModel(
        means=rng.uniform(0, 1, (runs, states, arms)),
        mean_sd=sd,
        transitions=np.repeat(uniform_switching(states, 0.1)[None], runs, 0),
        concentration=None,
        initial=np.full((runs, states), 1 / states),
    )
    diagonal = np.zeros((runs, states, arms, arms))
    diagonal[..., np.arange(arms), np.arange(arms)] = sd**2
    linear_model = OfflineModel(
        arm_model.means, np.zeros((runs, states, 1)), arm_model.transitions, None,
        arm_model.initial, diagonal,
    )  # fmt: skip
    arm, linear = ArmPosterior(arm_model, 5, 0.25), LinearPosterior(linear_model, 5, 0.25)
    identity = np.repeat(np.eye(arms)[None], runs, axis=0)
    for _ in range(40):
        particle_states = rng.integers(0, states, (runs, 5))
        actions = rng.integers(0, arms, runs)
        rewards = rng.normal(0.5, 1, runs)
        for a, b in zip(
            arm.predictive(None, actions), linear.predictive(identity, actions), strict=True
        ):
            np.testing.assert_allclose(a, b, atol=1e-12)
        arm.observe(particle_states, None, actions, rewards)
        linear.observe(particle_states, identity, actions, rewards)
    draws = 4000
    sampled = np.stack(
        [
            linear.sample_rewards(particle_states, identity, BatchRNG([i, i + 1]))
            for i in range(draws)
        ]
    )
    index = (np.arange(runs)[:, None], np.arange(5)[None, :], particle_states)
    se = np.sqrt(arm.var[index] / draws)
    assert np.all(np.abs(sampled.mean(axis=0) - arm.mean[index]) <= 4.5 * se + 1e-12)


def test_thompson_agents_play_a_contextual_world() -> None:
    """mTS and umTS (both action selections) act on contexts and learn: their regret on a
    linear world stays well below random play's on the same world."""
    world = linear_world(horizon=300, prior_scale=0.3)
    regret = {}
    for name, params in [
        ("mts", AGENTS["mts"].Params()),
        ("umts", AGENTS["umts"].Params(num_particles=50)),
        ("umts-sample", AGENTS["umts"].Params(num_particles=50, action_selection="sample")),
        ("random", AGENTS["random"].Params()),
    ]:
        agent = build_agent(AGENTS[params.name], params, world, BatchRNG([0]))
        trace = simulate(world, agent, progress=False)
        assert np.all(trace.regret >= -1e-12)
        regret[name] = trace.regret.sum()
    for name in ("mts", "umts", "umts-sample"):
        assert regret[name] < 0.5 * regret["random"], regret
