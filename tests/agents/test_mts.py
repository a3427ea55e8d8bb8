"""mTS's HMM filter against brute-force enumeration of latent paths (Algorithm 1, eq. (1))."""

from __future__ import annotations

import itertools

import numpy as np
from scipy.stats import norm

from nslb_cli.agents.mts import ModelThompsonSampling, MTSParams
from nslb_cli.bandit.problem import OfflineModel, Problem
from nslb_cli.bandit.rewards import Bernoulli
from nslb_cli.bandit.rng import BatchRNG


def tiny_chain(seed: int, n_states: int = 3, n_arms: int = 2):
    rng = np.random.default_rng(seed)
    means = rng.uniform(0, 1, (n_states, n_arms))
    transitions = rng.dirichlet(np.ones(n_states) * 2, size=n_states)
    initial = rng.dirichlet(np.ones(n_states))
    return means, transitions, initial


def brute_force_predictive(means, transitions, initial, actions, rewards, likelihood):
    """``P(S_t = s | R_1..R_{t-1})`` for every t by summing over all latent paths;
    ``likelihood(r, mu)`` is ``p(r | mu)``."""
    n_states = len(initial)
    out = np.zeros((len(actions), n_states))
    for t in range(len(actions)):
        paths = np.array(list(itertools.product(range(n_states), repeat=t + 1)))
        p = initial[paths[:, 0]].copy()
        for k in range(1, t + 1):
            p *= transitions[paths[:, k - 1], paths[:, k]]
        for k in range(t):
            p *= likelihood(rewards[k], means[paths[:, k], actions[k]])
        out[t] = np.bincount(paths[:, t], weights=p, minlength=n_states)
        out[t] /= out[t].sum()
    return out


def mts_agent(means, transitions, initial, sigma, runs=1, reward_model=None):
    n_states, n_arms = means.shape
    model = OfflineModel(
        means=np.repeat(means[None], runs, 0),
        mean_sd=np.zeros((runs, n_states, n_arms)),
        transitions=np.repeat(transitions[None], runs, 0),
        concentration=None,
        initial=np.repeat(initial[None], runs, 0),
    )
    problem = Problem(
        n_arms, n_states, horizon=10, sigma=sigma, n_runs=runs, reward_model=reward_model
    )
    return ModelThompsonSampling(MTSParams(), problem, model, BatchRNG(range(runs)))


def test_filter_equals_brute_force_enumeration() -> None:
    horizon, sigma = 7, 0.4
    for seed in range(3):
        means, transitions, initial = tiny_chain(seed)
        rng = np.random.default_rng(100 + seed)
        actions = rng.integers(0, 2, horizon)
        rewards = rng.normal(0.5, 0.6, horizon)
        expected = brute_force_predictive(
            means, transitions, initial, actions, rewards, lambda r, mu: norm.pdf(r, mu, sigma)
        )
        agent = mts_agent(means, transitions, initial, sigma)
        for t in range(horizon):
            np.testing.assert_allclose(agent.predictive[0], expected[t], rtol=1e-10, atol=1e-13)
            agent.update(t, None, actions[t : t + 1], rewards[t : t + 1])


def test_bernoulli_filter_equals_brute_force_enumeration() -> None:
    """The same with clicks: the emission of ``r`` in state ``s`` is ``mu^r (1 - mu)^(1-r)``.
    Nine rounds on three states (19683 paths), random clicks."""
    for seed in range(3):
        means, transitions, initial = tiny_chain(seed)
        rng = np.random.default_rng(200 + seed)
        horizon = 9
        actions = rng.integers(0, 2, horizon)
        rewards = (rng.random(horizon) < rng.random(horizon)).astype(float)
        expected = brute_force_predictive(
            means, transitions, initial, actions, rewards, lambda r, mu: mu**r * (1 - mu) ** (1 - r)
        )
        agent = mts_agent(means, transitions, initial, 0.5, reward_model=Bernoulli())
        for t in range(horizon):
            np.testing.assert_allclose(agent.predictive[0], expected[t], rtol=1e-10, atol=1e-13)
            agent.update(t, None, actions[t : t + 1], rewards[t : t + 1])
        assert not np.allclose(expected[-1], expected[0]), "the clicks moved the posterior"


def test_sampled_belief_follows_the_posterior() -> None:
    """``B_t ~ P_t``: over many runs the belief frequencies match ``P_1`` within 4.5 SE."""
    means, transitions, initial = tiny_chain(5)
    runs = 4000
    agent = mts_agent(means, transitions, initial, 0.5, runs=runs)
    agent.act(0, None)
    counts = np.bincount(agent.belief().state, minlength=3) / runs
    se = np.sqrt(initial * (1 - initial) / runs)
    assert np.all(np.abs(counts - initial) < 4.5 * se)


def test_posterior_is_a_distribution_under_extreme_rewards() -> None:
    means, transitions, initial = tiny_chain(1)
    agent = mts_agent(means, transitions, initial, 0.05)
    for t, reward in enumerate([50.0, -50.0, 1e3, 0.3]):
        agent.update(t, None, np.array([t % 2]), np.array([reward]))
        assert np.all(np.isfinite(agent.predictive))
        np.testing.assert_allclose(agent.predictive.sum(), 1.0, rtol=1e-12)


def test_the_state_major_filter_step_is_the_run_major_statement_to_the_last_bit() -> None:
    """mTS keeps ``P_t`` as ``(S, R)``; its step gives the numbers of the statement on
    ``(R, S)`` arrays (normalised along the last axis, propagated along the middle one of
    ``(R, S, S)``), also for 8 states and more, where numpy adds a row pairwise."""
    from nslb_cli.agents.mts import filter_step

    rng = np.random.default_rng(4)
    for n_states in (3, 8, 13, 40):
        predictive = rng.dirichlet(np.ones(n_states), 30)  # (R, S)
        log_lik = rng.normal(0, 3, (30, n_states))
        transitions = rng.dirichlet(np.ones(n_states), (30, n_states))
        filtered = predictive * np.exp(log_lik - log_lik.max(axis=1, keepdims=True))
        filtered /= filtered.sum(axis=1, keepdims=True)
        expected = (filtered[:, :, None] * transitions).sum(axis=1)
        got = filter_step(
            np.ascontiguousarray(predictive.T),
            np.ascontiguousarray(log_lik.T),
            np.ascontiguousarray(transitions.transpose(1, 2, 0)),
        )
        np.testing.assert_array_equal(got.T, expected)
