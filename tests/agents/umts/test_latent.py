"""umTS's particle filter against the exact filter: its latent states, weights and statistics."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from nslb_cli.agents.mts import ModelThompsonSampling, MTSParams
from nslb_cli.agents.umts import latent as particle_filter
from nslb_cli.agents.umts.agent import UMTSParams, UncertainModelThompsonSampling
from nslb_cli.agents.umts.resampling import SCHEMES
from nslb_cli.bandit.problem import OfflineModel
from nslb_cli.bandit.rewards import gaussian_log_likelihood
from nslb_cli.bandit.rng import BatchRNG
from nslb_cli.bandit.world import World
from nslb_cli.envs.synthetic import Synthetic, SyntheticParams
from tests.helpers.posteriors import statistics, variance
from tests.helpers.worlds import linear_world

PARTICLES = 1000
REPLICATES = 40


def replicate_model(model: OfflineModel, copies: int) -> OfflineModel:
    """Seed 0's model repeated ``copies`` times: independent particle filters, same data."""

    def rep(x):
        return None if x is None else np.repeat(x[:1], copies, axis=0)

    return OfflineModel(
        rep(model.means), rep(model.mean_sd), rep(model.transitions),
        rep(model.concentration), rep(model.initial), rep(model.covariance),
    )  # fmt: skip


def compare_with_exact_filter(world: World, resampling: str) -> None:
    """Feed one observation sequence to the exact filter and to REPLICATES particle filters.

    The mean over replicates of the particle estimate of ``P(S_t = s | H_t)`` must match the
    exact value within 4.5 standard errors of that mean (the SE estimated from the
    replicates' spread); 4.5 SE keeps the family-wise false-alarm rate below 1% over the
    ~100 compared values. Where every replicate agrees (SE ~ 0) a state may hold less mass
    than one particle: ``1/N``, the resolution of ``N`` particles, bounds what they can miss.
    """
    problem = world.problem
    exact_model = world.offline_model
    exact = ModelThompsonSampling(MTSParams(), problem, exact_model, BatchRNG([0]))
    batch_problem = replace(problem, n_runs=REPLICATES)
    particles = UncertainModelThompsonSampling(
        UMTSParams(num_particles=PARTICLES, resampling=resampling),
        batch_problem,
        replicate_model(exact_model, REPLICATES),
        BatchRNG(range(1000, 1000 + REPLICATES)),
    )
    observe = np.random.default_rng(7)
    for t in range(problem.horizon):
        if t % 5 == 0:
            estimate = particles.state_posterior()
            truth = exact.predictive[0]
            np.testing.assert_allclose(estimate.sum(axis=1), 1.0, rtol=1e-9)
            se = estimate.std(axis=0, ddof=1) / np.sqrt(REPLICATES)
            error = np.abs(estimate.mean(axis=0) - truth)
            assert np.all(error <= 4.5 * se + 1.0 / PARTICLES), (t, error, se)
        action = observe.integers(problem.n_arms, size=1)
        reward = world.reward(t, action)
        context = world.context(t)
        exact.update(t, context, action, reward)
        many = None if context is None else np.repeat(context, REPLICATES, axis=0)
        particles.update(t, many, np.repeat(action, REPLICATES), np.repeat(reward, REPLICATES))


@pytest.mark.parametrize("resampling", SCHEMES)
def test_known_model_particles_match_exact_filter(resampling: str) -> None:
    env = SyntheticParams(n_states=3, n_arms=3, horizon=60, switch_prob=0.05)
    compare_with_exact_filter(Synthetic.build(env, np.array([0])), resampling)


def test_tight_prior_particles_match_exact_filter_of_the_prior_mean() -> None:
    """umTS with a very tight prior (sd 1e-6, Dirichlet counts x 1e6) ≈ mTS on the prior mean."""
    env = SyntheticParams(
        n_states=3,
        n_arms=3,
        horizon=60,
        model="prior",
        prior_sd=1e-6,
        stay_concentration=95e6,
        move_concentration=2.5e6,
    )
    compare_with_exact_filter(Synthetic.build(env, np.array([0])), "systematic")


def test_known_linear_model_particles_match_exact_filter() -> None:
    """The same check with contexts: linear rewards, the model known (zero covariance)."""
    compare_with_exact_filter(linear_world(horizon=60, prior_scale=0.0), "systematic")


def test_weights_and_statistics_stay_consistent() -> None:
    """Each reward adds 1/sigma^2 to the precision of one (state, arm) of every particle, and
    each transition one Dirichlet count."""
    env = SyntheticParams(model="prior", horizon=80)
    world = Synthetic.build(env, np.array([0, 1]))
    agent = UncertainModelThompsonSampling(
        UMTSParams(num_particles=50), world.problem, world.offline_model, BatchRNG([0, 1])
    )
    prior_total = world.offline_model.concentration.sum(axis=(1, 2))
    prior_precision = 1.0 / env.prior_sd**2
    for t in range(env.horizon):
        actions = agent.act(t, None)
        agent.update(t, None, actions, world.reward(t, actions))
        gained = ((1.0 / variance(agent.rewards) - prior_precision) * env.sigma**2).sum(axis=(2, 3))
        np.testing.assert_allclose(gained, t + 1, rtol=1e-9)
        assert np.allclose(agent.counts.sum(axis=(2, 3)), prior_total[:, None] + t)
        assert np.all(np.isfinite(agent.log_weights))


def test_proposal_weight_is_the_predictive_likelihood() -> None:
    """``propose`` adds ``log sum_s phi_s N(R_t; m_s, v_s)`` to each log weight, also for a
    particle whose every state is far less likely than the run's best (its likelihoods are
    then taken relative to its own best, not underflowed to 0, and states with ``phi = 0``
    do not count as its best), and moves it to the state that explains the reward."""
    S, reward = 3, 0.4
    transitions = np.array([[0.9, 0.05, 0.05], [0.1, 0.8, 0.1], [0.0, 0.3, 0.7]])
    previous = np.array([[0, 1, 2]])
    slot = np.arange(3 * S).reshape(1, 3, S)  # every particle-state pair its own slot
    mean = np.array([0.3, 0.9, 0.1, 0.5, 0.4, 2.0, 50.0, 60.0, 75.0])  # 50: but phi = 0
    var = np.array([0.3, 0.26, 0.4, 0.25, 0.5, 0.3, 0.25, 0.3, 0.35])
    with np.errstate(divide="ignore"):
        log_phi = np.log(transitions[previous[0]])
    log_terms = log_phi + gaussian_log_likelihood(reward, mean, var).reshape(3, S)
    top = log_terms.max(axis=1, keepdims=True)
    expected = (top + np.log(np.exp(log_terms - top).sum(axis=1, keepdims=True)))[:, 0]
    assert expected[2] < expected[:2].max() - 1000, "particle 2 is far below the others"
    log_weights = np.zeros((1, 3))
    particle_filter.propose(
        0, np.random.default_rng(0), log_weights, previous, None, True, np.full((1, S), 1 / S),
        transitions[None], slot, np.arange(3 * S), -0.5 * (reward - mean) ** 2 / var,
        1 / np.sqrt(var), np.empty(3 * S),
    )  # fmt: skip
    np.testing.assert_allclose(log_weights[0], expected, rtol=1e-12)
    assert previous[0, 2] == 1, "the least unlikely state with phi > 0"


@pytest.mark.parametrize("selection", ["mean", "sample"])
def test_act_reports_the_state_posterior(selection: str) -> None:
    """The belief ``act`` reports is ``state_posterior()``, the estimate the exact-filter
    tests check, number for number."""
    world = Synthetic.build(SyntheticParams(model="prior", horizon=60), np.array([0, 1]))
    agent = UncertainModelThompsonSampling(
        UMTSParams(num_particles=30, action_selection=selection),
        world.problem,
        world.offline_model,
        BatchRNG([0, 1]),
    )
    for t in range(world.problem.horizon):
        expected = agent.state_posterior()
        actions = agent.act(t, None)
        np.testing.assert_array_equal(agent.belief().posterior, expected)
        agent.update(t, None, actions, world.reward(t, actions))


@pytest.mark.parametrize("model", ["known", "prior"])
def test_bernoulli_particles_match_exact_filter(model: str) -> None:
    """Clicks: umTS with the true model (Beta point masses) or a near-point-mass prior (Beta
    strength 1e8, Dirichlet counts x 1e6) ≈ mTS with the Bernoulli likelihood."""
    env = SyntheticParams(
        n_states=3,
        n_arms=3,
        horizon=60,
        switch_prob=0.05,
        reward="bernoulli",
        model=model,
        prior_strength=1e8,
        stay_concentration=95e6,
        move_concentration=2.5e6,
    )
    compare_with_exact_filter(Synthetic.build(env, np.array([0])), "systematic")


def test_bernoulli_statistics_count_the_clicks() -> None:
    """Each click adds 1 to the Beta strength a + b of one (state, arm) of every particle,
    and each transition one Dirichlet count; the strengths start at prior_strength."""
    env = SyntheticParams(model="prior", reward="bernoulli", horizon=80, prior_strength=5.0)
    world = Synthetic.build(env, np.array([0, 1]))
    agent = UncertainModelThompsonSampling(
        UMTSParams(num_particles=50), world.problem, world.offline_model, BatchRNG([0, 1])
    )
    np.testing.assert_allclose(statistics(agent.rewards)[1], 5.0, rtol=1e-9)
    prior_total = world.offline_model.concentration.sum(axis=(1, 2))
    for t in range(env.horizon):
        actions = agent.act(t, None)
        agent.update(t, None, actions, world.reward(t, actions))
        gained = (statistics(agent.rewards)[1] - 5.0).sum(axis=(2, 3))
        np.testing.assert_allclose(gained, t + 1, rtol=1e-9)
        assert np.allclose(agent.counts.sum(axis=(2, 3)), prior_total[:, None] + t)
        assert np.all(np.isfinite(agent.log_weights))
