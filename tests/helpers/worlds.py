"""Hand-made worlds for agent tests: chosen true means, latent path and offline model."""

from __future__ import annotations

import numpy as np

from nslb_cli.core.problem import OfflineModel, Problem
from nslb_cli.core.world import World
from nslb_cli.envs.synthetic import uniform_switching


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
