"""Worlds for agent tests: hand-made ones (chosen true means, latent path and offline model),
a linear contextual one, and synthetic ones built as the environment builds them."""

from __future__ import annotations

import numpy as np

from nslb_cli.bandit.problem import OfflineModel, Problem
from nslb_cli.bandit.world import World
from nslb_cli.envs.synthetic import Synthetic, SyntheticParams, uniform_switching


def synthetic_world(seeds: list[int], **env: object) -> World:
    """The synthetic environment's world for ``seeds``, with ``env`` settings."""
    return Synthetic.build(SyntheticParams(**env), np.asarray(seeds))


def hand_made_world(
    true_means: np.ndarray,
    states: np.ndarray,
    model_means: np.ndarray,
    sigma: float,
    seed: int = 0,
    switch_prob: float = 0.005,
) -> World:
    """A world with ``mu(a, s) = true_means[s, a]`` and latent path ``states`` in every run.

    Args:
        true_means: ``(S, K)``; states: ``(R, n)``; model_means: ``(S, K)``, what agents are
            told (a known model when equal to ``true_means``).
        sigma: reward noise; noise is ``N(0, sigma^2)`` drawn from ``seed``.
        switch_prob: the model's transition matrix stays with ``1 - switch_prob``.
    """
    R, n = states.shape
    S, K = true_means.shape
    stay = np.eye(1) if S == 1 else uniform_switching(S, switch_prob)
    model = OfflineModel(
        means=np.broadcast_to(model_means, (R, S, K)).copy(),
        mean_sd=np.zeros((R, S, K)),
        transitions=np.broadcast_to(stay, (R, S, S)).copy(),
        concentration=None,
        initial=np.full((R, S), 1.0 / S),
    )
    problem = Problem(n_arms=K, n_states=S, horizon=n, sigma=sigma, n_runs=R)
    noise = np.random.default_rng(seed).normal(0.0, sigma, (R, n))
    return World(problem, np.arange(R), states, true_means[states], noise, model)


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
