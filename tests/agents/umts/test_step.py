"""umTS with an uncertain model against the exact posterior, by enumerating latent paths.

With ``theta`` (Gaussian) and ``phi`` (Dirichlet) integrated out, the exact
``P(S_t = s | H_t)`` sums, over every path ``s_1..s_t``, the Dirichlet-multinomial
probability of the path's transitions times the marginal likelihood of the rewards it
assigns to each (state, arm), a product of conjugate Gaussian predictives. Tiny problems
(S = K = 2, 12 rounds: 4096 paths) make this exact and cheap.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import numpy as np
import pytest
from scipy.special import gammaln

from nslb_cli.agents.umts.agent import UMTSParams, UncertainModelThompsonSampling
from nslb_cli.bandit.problem import OfflineModel, Problem
from nslb_cli.bandit.rewards import Bernoulli, Gaussian, RewardModel, gaussian_log_likelihood
from nslb_cli.bandit.rng import BatchRNG
from tests.helpers.posteriors import variance

S, K, ROUNDS, SIGMA = 2, 2, 12, 0.5
PRIOR_MEAN = np.array([[0.2, 0.8], [0.7, 0.3]])
PRIOR_SD = 0.5
ALPHA = np.array([[8.0, 2.0], [3.0, 6.0]])
INITIAL = np.array([0.6, 0.4])
BETA_STRENGTH = 4.0  # clicks: mu(s, a) ~ Beta(c PRIOR_MEAN, c (1 - PRIOR_MEAN)), c = 4 ...
BETA_SD = np.sqrt(PRIOR_MEAN * (1 - PRIOR_MEAN) / (BETA_STRENGTH + 1))  # ... whose sd this is


def gaussian_log_marginal(
    paths: np.ndarray, actions: np.ndarray, rewards: np.ndarray, t: int
) -> np.ndarray:
    """``log p(R_1..R_{t-1} | path)`` with each ``mu(s, a) ~ N(PRIOR_MEAN, PRIOR_SD^2)``
    integrated out: a product of conjugate Gaussian predictives."""
    mean = np.broadcast_to(PRIOR_MEAN, (len(paths), S, K)).copy()
    var = np.full((len(paths), S, K), PRIOR_SD**2)
    rows = np.arange(len(paths))
    log_p = np.zeros(len(paths))
    for k in range(t):
        s, a, r = paths[:, k], actions[k], rewards[k]
        m, v = mean[rows, s, a], var[rows, s, a]
        log_p += gaussian_log_likelihood(r, m, v + SIGMA**2)
        mean[rows, s, a] = (SIGMA**2 * m + v * r) / (SIGMA**2 + v)
        var[rows, s, a] = v * SIGMA**2 / (SIGMA**2 + v)
    return log_p


def exact_predictive(
    actions: np.ndarray,
    rewards: np.ndarray,
    t: int,
    reward_log_marginal: Callable = gaussian_log_marginal,
) -> np.ndarray:
    """``P(S_t = s | R_1..R_{t-1})`` (0-based round ``t``), theta and phi integrated out."""
    paths = np.array(list(itertools.product(range(S), repeat=t + 1)))
    log_p = np.log(INITIAL[paths[:, 0]])
    counts = np.zeros((len(paths), S, S))
    for k in range(1, t + 1):
        counts[np.arange(len(paths)), paths[:, k - 1], paths[:, k]] += 1
    log_p += (
        gammaln(ALPHA.sum(1)) - gammaln(ALPHA.sum(1) + counts.sum(2))
        + (gammaln(ALPHA + counts) - gammaln(ALPHA)).sum(2)
    ).sum(1)  # fmt: skip
    log_p += reward_log_marginal(paths, actions, rewards, t)
    weights = np.exp(log_p - log_p.max())
    exact = np.bincount(paths[:, t], weights=weights, minlength=S)
    return exact / exact.sum()


def particle_filters(
    replicates: int, particles: int, reward_model: RewardModel | None = None, known: bool = False
) -> UncertainModelThompsonSampling:
    """``replicates`` runs of umTS on the tiny problem; ``known``: the means are known
    (``mean_sd = 0``, a point mass on ``PRIOR_MEAN``) instead of drawn from the prior."""

    def rep(x: np.ndarray) -> np.ndarray:
        return np.repeat(np.asarray(x, dtype=float)[None], replicates, axis=0)

    reward_model = reward_model or Gaussian(SIGMA)
    sd = BETA_SD if isinstance(reward_model, Bernoulli) else np.full((S, K), PRIOR_SD)
    if known:
        sd = np.zeros((S, K))
    model = OfflineModel(
        means=rep(PRIOR_MEAN),
        mean_sd=rep(sd),
        transitions=rep(ALPHA / ALPHA.sum(1, keepdims=True)),
        concentration=rep(ALPHA),
        initial=rep(INITIAL),
    )
    problem = Problem(K, S, ROUNDS, reward_model.scale, replicates, reward_model)
    return UncertainModelThompsonSampling(
        UMTSParams(num_particles=particles), problem, model, BatchRNG(range(replicates))
    )


@pytest.mark.parametrize("data_seed", [0, 1])
def test_uncertain_model_particles_match_exact_enumeration(data_seed: int) -> None:
    """The mean over 60 independent filters of 2000 particles is within 4.5 standard errors
    (estimated from the replicates) of the exact posterior in every round; 4.5 SE keeps the
    chance of a false failure over the 24 compared values below 0.1 %."""
    replicates = 60
    data = np.random.default_rng(data_seed)
    actions = data.integers(0, K, ROUNDS)
    rewards = data.normal(0.5, 0.6, ROUNDS)
    agent = particle_filters(replicates, 2000)
    for t in range(ROUNDS):
        estimate = agent.state_posterior()
        exact = exact_predictive(actions, rewards, t)
        se = estimate.std(axis=0, ddof=1) / np.sqrt(replicates)
        assert np.all(np.abs(estimate.mean(axis=0) - exact) <= 4.5 * se + 1e-12), (t, exact)
        agent.update(t, None, np.full(replicates, actions[t]), np.full(replicates, rewards[t]))


def test_mean_action_is_the_weighted_average_of_particle_samples() -> None:
    """With a known model, ``mean`` plays argmax_a sum_i w_i mu(a, B_t^i), in every run.

    The model is known through the offline model (``mean_sd = 0``): every sampled mu equals
    its prior mean, so each of the 200 runs must play the best arm. With the prior sd of the
    tests above (0.5) the weighted draws would pick the other arm in about a fifth of them."""
    runs = 200
    agent = particle_filters(runs, 6, known=True)
    np.testing.assert_array_equal(variance(agent.rewards), 0.0)  # a known model
    agent.started = True
    agent.counts = None
    agent.model = OfflineModel(
        agent.model.means,
        agent.model.mean_sd,
        np.repeat(np.eye(S)[None], runs, axis=0),
        None,
        agent.model.initial,
    )  # deterministic transitions: B_t^i = B_{t-1}^i
    agent.previous = np.tile([0, 0, 0, 1, 1, 1], (runs, 1))
    for heavy, best in ((1, 0), (0, 1)):
        # Particles in the `heavy` state carry 0.9 of the weight: its best arm must be played.
        weights = np.where(agent.previous[0] == heavy, 0.3, 0.1 / 3)
        agent.log_weights = np.tile(np.log(weights), (runs, 1))
        expected = int(np.argmax((weights[:, None] * PRIOR_MEAN[agent.previous[0]]).sum(0)))
        assert expected == int(np.argmax(PRIOR_MEAN[heavy])) == best
        np.testing.assert_array_equal(agent.act(5, None), best)


def beta_log_marginal(
    paths: np.ndarray, actions: np.ndarray, clicks: np.ndarray, t: int
) -> np.ndarray:
    """``log P(R_1..R_{t-1} | path)`` with each ``mu(s, a) ~ Beta(a, b)``, ``a = c m``,
    ``b = c (1 - m)``, integrated out: click ``r`` has predictive probability ``a / (a + b)``
    if ``r = 1`` and ``b / (a + b)`` otherwise, then ``a += r``, ``b += 1 - r``."""
    a = np.broadcast_to(BETA_STRENGTH * PRIOR_MEAN, (len(paths), S, K)).copy()
    b = np.broadcast_to(BETA_STRENGTH * (1 - PRIOR_MEAN), (len(paths), S, K)).copy()
    rows = np.arange(len(paths))
    log_p = np.zeros(len(paths))
    for k in range(t):
        s, arm, r = paths[:, k], actions[k], clicks[k]
        hits, misses = a[rows, s, arm], b[rows, s, arm]
        log_p += np.log((hits if r == 1 else misses) / (hits + misses))
        a[rows, s, arm] += r
        b[rows, s, arm] += 1 - r
    return log_p


@pytest.mark.parametrize("data_seed", [0, 1])
def test_bernoulli_particles_match_exact_enumeration(data_seed: int) -> None:
    """Clicks, Beta priors on the means (strength 4): as above, the mean over 60 filters of
    2000 particles is within 4.5 replicate standard errors of the exact posterior."""
    replicates = 60
    data = np.random.default_rng(data_seed)
    actions = data.integers(0, K, ROUNDS)
    clicks = (data.random(ROUNDS) < 0.5).astype(float)
    agent = particle_filters(replicates, 2000, Bernoulli())
    for t in range(ROUNDS):
        estimate = agent.state_posterior()
        exact = exact_predictive(actions, clicks, t, beta_log_marginal)
        se = estimate.std(axis=0, ddof=1) / np.sqrt(replicates)
        assert np.all(np.abs(estimate.mean(axis=0) - exact) <= 4.5 * se + 1e-12), (t, exact)
        agent.update(t, None, np.full(replicates, actions[t]), np.full(replicates, clicks[t]))
