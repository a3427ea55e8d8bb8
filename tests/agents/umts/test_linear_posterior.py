"""Reward posteriors of umTS against closed forms: Bayesian linear regression (contexts), the
same with one-hot features as the per-arm posterior, and umTS and mTS on a linear world."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from nslb_cli.agents import AGENTS, Agent
from nslb_cli.agents.umts.agent import reward_posterior
from nslb_cli.agents.umts.linear_posterior import LinearPosterior
from nslb_cli.bandit.problem import OfflineModel, Problem
from nslb_cli.bandit.rewards import Bernoulli
from nslb_cli.bandit.rng import BatchRNG
from nslb_cli.envs.synthetic import uniform_switching
from nslb_cli.runner.simulate import build_agent, simulate
from tests.helpers.posteriors import statistics, variance
from tests.helpers.worlds import linear_world


def test_recursive_updates_equal_batch_bayesian_linear_regression() -> None:
    """After n rewards: C_n = (C0^-1 + X'X / s2)^-1 and m_n = C_n (C0^-1 m0 + X'y / s2).

    Every particle starts in state 0 and stays there (P_1 = e_0, phi = identity), so all
    rewards go to state 0's statistics, shared by the particles in one pool slot."""
    world = linear_world(prior_scale=0.7)
    model = world.offline_model
    S = model.means.shape[1]
    posterior = LinearPosterior(model, n_particles=2, noise_var=0.25)
    weights, resamples = np.zeros((1, 2)), np.zeros(1, dtype=np.int64)
    latent = (np.zeros((1, 2), dtype=np.int64), None, False, np.eye(S)[:1], np.eye(S)[None])
    rng = np.random.default_rng(0)
    xs, ys = [], []
    for t in range(30):
        context = world.context(t)
        action = rng.integers(world.problem.n_arms, size=1)
        reward = rng.normal(1.0, 1.0, 1)
        posterior.step(BatchRNG([0]), weights, latent, context, action, reward, 0.5, 0, resamples)
        latent = (*latent[:2], True, *latent[3:])
        xs.append(context[0, action[0]])
        ys.append(reward[0])
    x, y = np.array(xs), np.array(ys)
    prior_precision = np.linalg.inv(model.covariance[0, 0])
    cov = np.linalg.inv(prior_precision + x.T @ x / 0.25)
    mean = cov @ (prior_precision @ model.means[0, 0] + x.T @ y / 0.25)
    for particle in range(2):
        np.testing.assert_allclose(statistics(posterior)[1][0, particle, 0], cov, atol=1e-10)
        np.testing.assert_allclose(statistics(posterior)[0][0, particle, 0], mean, atol=1e-9)
    np.testing.assert_array_equal(
        statistics(posterior)[0][0, :, 1], model.means[0, 1][None].repeat(2, 0)
    )
    assert (posterior.pool.refs[0] > 0).sum() == S, "one shared slot per state"
    assert resamples[0] == 0 and np.all(weights == weights[0, 0]), "equal predictives"


def one_hot_agents(runs: int, particles: int) -> tuple[Agent, Agent]:
    """The same uncertain model as a multi-armed one and as a linear one with one-hot
    features (contexts = identity, diagonal prior covariance)."""
    rng = np.random.default_rng(1)
    states, arms = 3, 4
    sd = rng.uniform(0.1, 0.5, (runs, states, arms))
    transitions = np.repeat(uniform_switching(states, 0.1)[None], runs, 0)
    arm_model = OfflineModel(
        means=rng.uniform(0, 1, (runs, states, arms)),
        mean_sd=sd,
        transitions=transitions,
        concentration=50 * transitions,
        initial=np.full((runs, states), 1 / states),
    )
    diagonal = np.zeros((runs, states, arms, arms))
    diagonal[..., np.arange(arms), np.arange(arms)] = sd**2
    linear_model = replace(arm_model, mean_sd=np.zeros((runs, states, 1)), covariance=diagonal)
    problem = Problem(n_arms=arms, n_states=states, horizon=40, sigma=0.5, n_runs=runs)
    params = AGENTS["umts"].Params(num_particles=particles, resample_threshold=0.8)
    seeds = range(runs)
    return (
        AGENTS["umts"](params, problem, arm_model, BatchRNG(seeds)),
        AGENTS["umts"](params, problem, linear_model, BatchRNG(seeds)),
    )


def test_linear_posterior_with_one_hot_features_is_the_arm_posterior() -> None:
    """Multi-armed = linear with X_t = identity: the two families, fed the same data with
    the same seeds, draw the same numbers and carry the same weights, states and statistics
    (the linear one in its pool of shared slots)."""
    runs, particles = 2, 30
    arm, linear = one_hot_agents(runs, particles)
    identity = np.repeat(np.eye(arm.problem.n_arms)[None], runs, axis=0)
    data = np.random.default_rng(2)
    for t in range(arm.problem.horizon):
        played = arm.act(t, None)
        np.testing.assert_array_equal(linear.act(t, identity), played)
        rewards = data.normal(0.5, 1, runs)
        arm.update(t, None, played, rewards)
        linear.update(t, identity, played, rewards)
        np.testing.assert_allclose(linear.log_weights, arm.log_weights, rtol=0, atol=1e-9)
        np.testing.assert_array_equal(linear.previous, arm.previous)
        np.testing.assert_allclose(
            statistics(linear.rewards)[0], statistics(arm.rewards)[0], rtol=0, atol=1e-12
        )
        variances = np.diagonal(statistics(linear.rewards)[1], axis1=-2, axis2=-1)
        np.testing.assert_allclose(variances, variance(arm.rewards), rtol=0, atol=1e-12)
    assert arm.resamples.sum() > 0, "resampling was exercised"
    assert (linear.rewards.pool.refs > 0).sum() > runs * arm.problem.n_states, "slots were split"


def test_mixture_draws_have_the_weighted_sum_law() -> None:
    """``sample_mixture`` draws ``M = sum_m w_m mu^{i_m}`` from its exact law: for the linear
    family ``X · theta``, ``theta ~ N(sum w_m m_m, sum w_m^2 C_m)``; mean and variance of
    every arm within 4.5 standard errors over 4000 draws."""
    world = linear_world(prior_scale=0.7)
    model = world.offline_model
    posterior = LinearPosterior(model, n_particles=6, noise_var=0.25)
    rng = np.random.default_rng(3)
    particles = np.arange(6)[None]
    states = rng.integers(0, model.means.shape[1], (1, 6))
    weights = rng.dirichlet(np.ones(6))[None]
    context = world.context(0)
    draws = 4000
    sampled = np.stack(
        [
            posterior.sample_mixture(BatchRNG([i]), particles, states, weights, context)[0]
            for i in range(draws)
        ]
    )
    theta_mean = (weights[0, :, None] * model.means[0, states[0]]).sum(0)
    theta_cov = (weights[0, :, None, None] ** 2 * model.covariance[0, states[0]]).sum(0)
    mean = context[0] @ theta_mean
    var = np.einsum("kd,de,ke->k", context[0], theta_cov, context[0])
    se = np.sqrt(var / draws)
    assert np.all(np.abs(sampled.mean(axis=0) - mean) <= 4.5 * se)
    var_se = var * np.sqrt(2 / (draws - 1))
    assert np.all(np.abs(sampled.var(axis=0, ddof=1) - var) <= 4.5 * var_se)


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


def test_contexts_with_clicks_are_refused() -> None:
    """Bayesian linear regression is conjugate to Gaussian rewards only."""
    model = linear_world().offline_model
    with pytest.raises(ValueError, match="needs Gaussian rewards"):
        reward_posterior(model, 10, Bernoulli())
