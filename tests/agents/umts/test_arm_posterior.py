"""Reward posteriors of umTS against closed forms: per-arm Beta posteriors of clicks
(nslb_cli.agents.umts.arm_posterior)."""

from __future__ import annotations

import numpy as np

from nslb_cli.agents.umts.agent import reward_posterior
from nslb_cli.agents.umts.arm_posterior import ArmPosterior
from nslb_cli.bandit.problem import OfflineModel
from nslb_cli.bandit.rewards import Bernoulli
from nslb_cli.bandit.rng import BatchRNG
from tests.helpers.posteriors import statistics, variance


def click_posterior(strength: np.ndarray, n_particles: int) -> ArmPosterior:
    """One run, two states, two arms: Beta priors with means 0.3, 0.6 / 0.8, 0.1 and the
    given strengths (``inf``: known)."""
    means = np.array([[[0.3, 0.6], [0.8, 0.1]]])
    sd = np.sqrt(means * (1 - means) / (strength + 1))
    model = OfflineModel(
        means=means,
        mean_sd=sd,
        transitions=np.eye(2)[None],
        concentration=None,
        initial=np.array([[1.0, 0.0]]),
    )
    return reward_posterior(model, n_particles, Bernoulli())


def test_beta_statistics_follow_the_clicks() -> None:
    """Every particle starts in state 0 and stays there: after the clicks of arm 0, its
    statistics are Beta(a + clicks, b + misses), shared by the particles in one slot; arm 1
    and state 1 keep their prior, and a known arm (strength inf) never changes."""
    strength = np.array([[[4.0, np.inf], [9.0, 2.0]]])
    posterior = click_posterior(strength, n_particles=3)
    weights, resamples = np.zeros((1, 3)), np.zeros(1, dtype=np.int64)
    latent = (
        np.zeros((1, 3), dtype=np.int64),
        None,
        False,
        np.array([[1.0, 0.0]]),
        np.eye(2)[None],
    )
    clicks = [1.0, 0.0, 1.0, 1.0, 0.0, 1.0]
    for click in clicks:
        for arm in (0, 1):
            posterior.step(
                BatchRNG([0]), weights, latent, None, np.array([arm]), np.array([click]), 0.5, 0,
                resamples,
            )  # fmt: skip
        latent = (*latent[:2], True, *latent[3:])
    mean, strength_now = statistics(posterior)
    a, b = 4.0 * 0.3 + sum(clicks), 4.0 * 0.7 + len(clicks) - sum(clicks)
    np.testing.assert_allclose(mean[0, :, 0, 0], a / (a + b), rtol=1e-12)
    np.testing.assert_allclose(strength_now[0, :, 0, 0], a + b, rtol=1e-12)
    np.testing.assert_array_equal(mean[0, :, 0, 1], 0.6)
    assert np.all(np.isinf(strength_now[0, :, 0, 1]))
    np.testing.assert_allclose(mean[0, :, 1], [[0.8, 0.1]] * 3)
    np.testing.assert_allclose(
        variance(posterior)[0, :, 0, 0], a * b / ((a + b) ** 2 * (a + b + 1))
    )
    assert (posterior.pool.refs[0] > 0).sum() == 2, "one shared slot per state"


def test_beta_mixture_draws_every_particle() -> None:
    """``M = sum_m w_m mu^{i_m}``: with Beta posteriors each particle's ``mu`` is its own
    draw, also when particles share their statistics: mean ``sum_m w_m m`` and variance
    ``sum_m w_m^2 m (1 - m) / (n + 1)`` (a draw per slot would give ``(sum_m w_m)^2``
    times it), within 4.5 SE over 4000 draws; a known arm is its mean, without noise."""
    strength = np.array([[[4.0, np.inf], [9.0, np.inf]]])  # arm 1 known in both states
    posterior = click_posterior(strength, n_particles=4)
    particles = np.arange(4)[None]
    states = np.array([[0, 0, 1, 0]])  # particles 0, 1, 3 share state 0's slot
    weights = np.array([[0.4, 0.3, 0.2, 0.1]])
    draws = 4000
    sampled = np.stack(
        [
            posterior.sample_mixture(BatchRNG([i]), particles, states, weights, None)[0]
            for i in range(draws)
        ]
    )
    m = np.array([[0.3, 0.6], [0.8, 0.1]])[states[0]]  # (4, 2)
    var = m * (1 - m) / (strength[0, states[0]] + 1)
    mean = (weights[0, :, None] * m).sum(0)
    variance = (weights[0, :, None] ** 2 * var).sum(0)
    np.testing.assert_allclose(sampled[:, 1], mean[1], rtol=1e-12)  # known: no draw
    se = np.sqrt(variance[0] / draws)
    assert abs(sampled[:, 0].mean() - mean[0]) <= 4.5 * se
    var_se = np.sqrt(((sampled[:, 0] - sampled[:, 0].mean()) ** 2).var() / draws)
    assert abs(sampled[:, 0].var(ddof=1) - variance[0]) <= 4.5 * var_se
