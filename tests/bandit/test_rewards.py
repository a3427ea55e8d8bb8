"""The reward models (nslb_cli.bandit.rewards): posteriors, predictives, draws vs closed forms."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import betaln, rel_entr
from scipy.stats import multivariate_normal, norm

from nslb_cli.bandit import reward_kernels
from nslb_cli.bandit.problem import Problem
from nslb_cli.bandit.rewards import Bernoulli, Gaussian
from nslb_cli.bandit.rng import BatchRNG

SIGMA = 0.5
CLICKS = np.array([1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0, 1.0])
RATINGS = np.array([0.3, 1.1, -0.2, 0.8, 0.5, 0.9])


def observe(model, stats, rewards):
    for r in rewards:
        stats = model.update(stats, np.array(r))
    return stats


def test_gaussian_posterior_is_the_closed_form() -> None:
    """N(m0, v0) prior, n rewards: precision 1/v0 + n/sigma^2, mean (m0/v0 + sum r/sigma^2)
    / precision; the predictive log-likelihoods sum to the log marginal likelihood, the
    density of N(m0 1, v0 1 1' + sigma^2 I)."""
    model = Gaussian(SIGMA)
    m0, sd0 = 0.4, 0.3
    stats = model.prior(np.array(m0), np.array(sd0))
    total = 0.0
    for r in RATINGS:
        total += float(model.predictive_log_likelihood(stats, np.array(r)))
        stats = model.update(stats, np.array(r))
    precision = 1 / sd0**2 + len(RATINGS) / SIGMA**2
    np.testing.assert_allclose(stats[1], 1 / precision, rtol=1e-12)
    np.testing.assert_allclose(
        stats[0], (m0 / sd0**2 + RATINGS.sum() / SIGMA**2) / precision, rtol=1e-12
    )
    n = len(RATINGS)
    cov = sd0**2 * np.ones((n, n)) + SIGMA**2 * np.eye(n)
    np.testing.assert_allclose(total, multivariate_normal(np.full(n, m0), cov).logpdf(RATINGS))


def test_bernoulli_posterior_is_the_closed_form() -> None:
    """Beta(a, b) prior, clicks r_1..r_n: Beta(a + sum r, b + n - sum r), i.e. mean
    a'/(a' + b') and strength a' + b'; P(r = 1) = a/(a + b) before each click, so the
    predictive log-likelihoods sum to log B(a', b') - log B(a, b)."""
    model = Bernoulli()
    a, b = 2.0, 5.0
    mean, sd = a / (a + b), np.sqrt(a * b / ((a + b) ** 2 * (a + b + 1)))
    stats = model.prior(np.array(mean), np.array(sd))
    np.testing.assert_allclose(stats[1], a + b, rtol=1e-12)
    total = 0.0
    for r in CLICKS:
        m = stats[0]
        predictive = float(model.predictive_log_likelihood(stats, np.array(r)))
        np.testing.assert_allclose(predictive, np.log(m if r == 1 else 1 - m), rtol=1e-12)
        total += predictive
        stats = model.update(stats, np.array(r))
    a_post, b_post = a + CLICKS.sum(), b + len(CLICKS) - CLICKS.sum()
    np.testing.assert_allclose(stats[0], a_post / (a_post + b_post), rtol=1e-12)
    np.testing.assert_allclose(stats[1], a_post + b_post, rtol=1e-12)
    np.testing.assert_allclose(total, betaln(a_post, b_post) - betaln(a, b), rtol=1e-12)


@pytest.mark.parametrize("model", [Gaussian(SIGMA), Bernoulli()], ids=["gaussian", "bernoulli"])
def test_a_known_mean_is_a_point_mass(model) -> None:
    """Zero prior sd: rewards leave the mean unchanged, draws return it, and the predictive
    is the likelihood itself."""
    mean = np.array([[0.2, 0.7, 0.0, 1.0]])
    stats = model.prior(mean, np.zeros_like(mean))
    for r in (1.0, 0.0, 1.0):
        stats = model.update(stats, np.full(mean.shape, r))
        np.testing.assert_array_equal(stats[0], mean)
    np.testing.assert_array_equal(model.sample(stats, BatchRNG([3])), mean)
    rewards = np.array([[1.0, 0.0, 1.0, 0.0]])
    np.testing.assert_allclose(
        model.predictive_log_likelihood(stats, rewards), model.log_likelihood(rewards, mean)
    )


def test_bernoulli_likelihood_and_its_floor() -> None:
    """log mu for a click, log(1 - mu) otherwise; an impossible click stays finite."""
    model = Bernoulli()
    mu = np.array([0.25, 0.25, 0.0, 1.0])
    r = np.array([1.0, 0.0, 1.0, 0.0])
    got = model.log_likelihood(r, mu)
    np.testing.assert_allclose(got[:2], np.log([0.25, 0.75]))
    assert np.all(np.isfinite(got)) and np.all(got[2:] < -700)


def test_gaussian_likelihood_is_the_normal_density() -> None:
    mu, r = np.array([0.1, 0.6]), np.array([0.4, -0.3])
    np.testing.assert_allclose(Gaussian(SIGMA).log_likelihood(r, mu), norm(mu, SIGMA).logpdf(r))


def test_bernoulli_prior_refuses_an_impossible_spread() -> None:
    """A distribution on [0, 1] with mean m has variance below m (1 - m)."""
    with pytest.raises(ValueError, match="sd\\^2 < m"):
        Bernoulli().prior(np.array([0.5]), np.array([0.5]))


DRAWS = 20000


def assert_moments(draws: np.ndarray, mean: list[float], var: list[float]) -> None:
    """Per column: the sample mean within 4.5 SE of ``mean``, the sample variance within
    4.5 SE (estimated from the draws' squared deviations) of ``var``."""
    centred = draws - draws.mean(axis=0)
    assert np.all(np.abs(draws.mean(axis=0) - mean) < 4.5 * np.sqrt(np.array(var) / len(draws)))
    se_var = (centred**2).std(axis=0, ddof=1) / np.sqrt(len(draws))
    assert np.all(np.abs((centred**2).mean(axis=0) - var) < 4.5 * se_var)


@pytest.mark.parametrize(
    ("model", "stats", "mean", "var"),
    [
        (Gaussian(SIGMA), (np.array([0.3, -1.0]), np.array([0.04, 0.5])), [0.3, -1.0], [0.04, 0.5]),
        (
            Bernoulli(),
            (np.array([0.3, 0.9]), np.array([4.0, 50.0])),
            [0.3, 0.9],
            [0.3 * 0.7 / 5, 0.9 * 0.1 / 51],
        ),
    ],
    ids=["gaussian", "bernoulli"],
)
def test_posterior_draws_have_the_posterior_moments(model, stats, mean, var) -> None:
    """20000 draws, one run each (module helper ``assert_moments``)."""
    batch = (np.tile(stats[0], (DRAWS, 1)), np.tile(stats[1], (DRAWS, 1)))
    assert_moments(model.sample(batch, BatchRNG(range(DRAWS))), mean, var)


@pytest.mark.parametrize(
    ("model", "mean", "var"),
    [
        # N(0, sigma^2) prior: N(y / (n + 1), sigma^2 / (n + 1)).
        (Gaussian(SIGMA), [0.0, 3.0 / 7], [SIGMA**2, SIGMA**2 / 7]),
        # Beta(1, 1) prior: Beta(1 + y, 1 + n - y).
        (Bernoulli(), [0.5, 4.0 / 8], [1 / 12, 4 * 4 / (8**2 * 9)]),
    ],
    ids=["gaussian", "bernoulli"],
)
def test_draws_given_sums_use_the_default_prior(model, mean, var) -> None:
    """Two arms: none pulled, and 6 pulls summing to 3."""
    pulls = np.tile([0.0, 6.0], (DRAWS, 1))
    sums = np.tile([0.0, 3.0], (DRAWS, 1))
    assert_moments(model.sample_given_sums(pulls, sums, BatchRNG(range(DRAWS))), mean, var)


def test_draws_of_a_run_do_not_depend_on_its_batch() -> None:
    stats = (np.array([[0.2, 0.6], [0.5, 0.5], [0.9, 0.1]]), np.array([[3.0, 8.0]] * 3))
    batch = Bernoulli().sample(stats, BatchRNG([4, 7, 9]))
    alone = Bernoulli().sample((stats[0][1:2], stats[1][1:2]), BatchRNG([7]))
    np.testing.assert_array_equal(batch[1], alone[0])


def test_realised_rewards_use_the_round_noise() -> None:
    means, noise = np.array([0.2, 0.8, 0.5]), np.array([0.5, 0.5, 0.1])
    np.testing.assert_array_equal(Bernoulli().realise(means, noise), [0.0, 1.0, 1.0])
    np.testing.assert_array_equal(Gaussian(SIGMA).realise(means, noise), means + noise)


def test_problem_sigma_is_the_reward_models_scale() -> None:
    assert Problem(2, 2, 10, 0.3, 1).reward_model == Gaussian(0.3)
    assert Problem(2, 2, 10, 0.5, 1, reward_model=Bernoulli()).sigma == 0.5
    with pytest.raises(ValueError, match="scale"):
        Problem(2, 2, 10, 0.3, 1, reward_model=Bernoulli())


MODELS = [Gaussian(SIGMA), Bernoulli()]


@pytest.mark.parametrize("model", MODELS, ids=["gaussian", "bernoulli"])
def test_compiled_twins_compute_what_the_numpy_methods_do(model) -> None:
    """nslb_cli.bandit.reward_kernels, entry by entry, against the numpy methods: the same update
    bit for bit, the same predictive up to the family's constant (1 / sqrt(2 pi) for
    Gaussian rewards), the same answer to whether a reward changes the statistics."""
    family, parameter = model.kernel
    rng = np.random.default_rng(11)
    mean = rng.uniform(0.05, 0.95, 12)
    spread = np.where(np.arange(12) < 3, 0.0, rng.uniform(0.001, 0.04, 12))
    stats = model.prior(mean, spread)
    rewards = (rng.random(12) < 0.5).astype(float)
    constant = 0.5 * np.log(2 * np.pi) if isinstance(model, Gaussian) else 0.0
    updated = model.update(stats, rewards)
    for i in range(12):
        exponent, scale = reward_kernels.predictive(
            family, parameter, rewards[i], stats[0][i], stats[1][i]
        )
        expected = model.predictive_log_likelihood((stats[0][i], stats[1][i]), rewards[i])
        np.testing.assert_allclose(exponent + np.log(scale) - constant, expected, rtol=1e-12)
        first, second = reward_kernels.update(
            family, parameter, rewards[i], stats[0][i], stats[1][i]
        )
        assert (first, second) == (updated[0][i], updated[1][i])
        assert reward_kernels.learns(family, stats[1][i]) == (i >= 3)


@pytest.mark.parametrize("model", MODELS, ids=["gaussian", "bernoulli"])
def test_compiled_draws_have_the_posterior_moments(model) -> None:
    stats = model.prior(np.array([0.3]), np.array([0.15]))
    family = model.kernel[0]
    generator = np.random.default_rng(12)
    draws = np.array(
        [reward_kernels.draw(family, generator, stats[0][0], stats[1][0]) for _ in range(DRAWS)]
    )
    assert_moments(draws[:, None], [0.3], [0.15**2])


# Divergences and kl-UCB indices (RewardModel.divergence, RewardModel.upper_confidence).


def test_divergence_is_the_kullback_leibler_divergence_of_the_laws() -> None:
    """KL(p_x || p_y) summed over the support: Bernoulli means 0 and 1 included (0 log 0 = 0,
    0 where x = y); Gaussian by numerical integration of p_x log(p_x / p_y)."""
    bernoulli = Bernoulli()
    x = np.array([0.0, 0.0, 0.3, 0.3, 1.0, 1.0, 0.9, 0.5])
    y = np.array([0.0, 0.4, 0.3, 0.7, 1.0, 0.2, 0.05, 0.5])
    expected = rel_entr(x, y) + rel_entr(1 - x, 1 - y)
    np.testing.assert_allclose(bernoulli.divergence(x, y), expected, rtol=1e-12, atol=1e-13)
    gaussian = Gaussian(SIGMA)
    r = np.linspace(-8.0, 8.0, 200_001)
    for mx, my in [(0.3, 1.1), (-0.2, -0.2), (2.0, -1.0)]:
        px, py = norm(mx, SIGMA), norm(my, SIGMA)
        integral = np.trapezoid(px.pdf(r) * (px.logpdf(r) - py.logpdf(r)), r)
        np.testing.assert_allclose(gaussian.divergence(mx, my), integral, atol=1e-9)


def brute_force_index(model, mean: float, level: float, top: float) -> tuple[float, float]:
    """The largest point q of a grid on ``[mean, top]`` with ``d(mean, q) <= level`` (a search
    of the kl ball), and the grid's step."""
    grid = np.linspace(mean, top, 400_001)
    return float(grid[model.divergence(mean, grid) <= level].max()), float(grid[1] - grid[0])


@pytest.mark.parametrize("model", MODELS, ids=["gaussian", "bernoulli"])
def test_upper_confidence_is_the_top_of_the_kl_ball(model) -> None:
    """kl-UCB index = max {q : d(mean, q) <= level}, against an exhaustive search over a fine
    grid (so within one grid step), on means and levels a bandit meets."""
    gaussian = isinstance(model, Gaussian)
    means = [-0.7, 0.0, 0.4, 1.3] if gaussian else [0.0, 0.001, 0.1, 0.5, 0.93, 1.0]
    for mean in means:
        for level in [1e-4, 0.01, 0.3, 2.0, 9.0]:
            top = mean + 2.2 if gaussian else 1.0  # sigma sqrt(2 * 9) = 2.12
            expected, step = brute_force_index(model, mean, level, top)
            got = float(model.upper_confidence(np.array(mean), np.array(level)))
            assert expected <= got <= expected + 1.01 * step, (mean, level)
    # limits: level 0 gives the mean; an infinite level the top of the support
    np.testing.assert_array_equal(model.upper_confidence(np.array([0.3]), np.array([0.0])), [0.3])
    assert model.upper_confidence(np.array(0.3), np.array(np.inf)) == model.support[1]


def test_bernoulli_index_converges_on_the_whole_range() -> None:
    """The bounded Newton steps reach a 200-step bisection within 1e-9 for every mean in
    [0, 1] (0 and 1 included) and levels from 1e-6 (n ~ 1e6 pulls) to 60, roots within 1e-26
    of 1 included; each index has kl(mean, index) = level where it is below 1."""
    model = Bernoulli()
    p = np.concatenate([[0.0, 1e-6, 1e-3], np.linspace(0.0, 1.0, 101), [0.999, 1 - 1e-6]])
    level = np.concatenate([[1e-6, 1e-4], np.geomspace(1e-3, 60.0, 40)])
    P, L = np.meshgrid(p, level, indexing="ij")
    low, high = P.copy(), np.ones_like(P)
    for _ in range(200):
        middle = (low + high) / 2
        above = model.divergence(P, middle) > L
        high, low = np.where(above, middle, high), np.where(above, low, middle)
    got = model.upper_confidence(P, L)
    np.testing.assert_allclose(got, (low + high) / 2, rtol=0, atol=1e-9)
    inside = got < 1 - 1e-9
    np.testing.assert_allclose(model.divergence(P, got)[inside], L[inside], rtol=1e-6)
