"""The synthetic environment (docs/design.md §3.1) and its randomness (§2)."""

from __future__ import annotations

import numpy as np
import pytest

from nslb_cli.common.errors import ConfigError
from nslb_cli.envs.synthetic import Synthetic, SyntheticParams, _draw_parameters

SEEDS = np.arange(40)


def test_fixed_dynamics_change_exactly_every_period() -> None:
    p = SyntheticParams(dynamics="fixed", horizon=1000, period=200)
    states = Synthetic.build(p, SEEDS).states
    changed = states[:, 1:] != states[:, :-1]
    rounds = np.arange(1, p.horizon)
    assert np.all(changed[:, rounds % p.period == 0]), "a change at every multiple of period"
    assert not np.any(changed[:, rounds % p.period != 0]), "no change anywhere else"


def test_markov_switch_rate_matches_switch_prob() -> None:
    """Switch frequency over 40 × 4999 steps within 4 binomial SE of switch_prob."""
    p = SyntheticParams(horizon=5000, switch_prob=0.01)
    states = Synthetic.build(p, SEEDS).states
    switches = (states[:, 1:] != states[:, :-1]).mean()
    se = np.sqrt(p.switch_prob * (1 - p.switch_prob) / states[:, 1:].size)
    assert abs(switches - p.switch_prob) < 4 * se


def test_first_state_and_moves_are_uniform() -> None:
    """Destination frequencies of 'move' steps from each state: all S-1 others, near-equal."""
    p = SyntheticParams(horizon=4000, switch_prob=0.1, n_states=4)
    states = Synthetic.build(p, np.arange(20)).states
    prev, nxt = states[:, :-1].ravel(), states[:, 1:].ravel()
    moved = prev != nxt
    for s in range(p.n_states):
        dest = np.bincount(nxt[moved & (prev == s)], minlength=p.n_states) / np.sum(
            moved & (prev == s)
        )
        assert dest[s] == 0
        n = np.sum(moved & (prev == s))
        se = np.sqrt((1 / 3) * (2 / 3) / n)
        others = np.delete(dest, s)
        assert np.all(np.abs(others - 1 / 3) < 4.5 * se)


def test_first_state_is_uniform() -> None:
    """Frequencies of S_1 over 2000 seeds within 4 binomial SE of 1/S."""
    p = SyntheticParams(horizon=1, n_states=4)
    first = Synthetic.build(p, np.arange(2000)).states[:, 0]
    frequency = np.bincount(first, minlength=4) / len(first)
    assert np.all(np.abs(frequency - 0.25) < 4 * np.sqrt(0.25 * 0.75 / len(first)))


def test_prior_model_true_transitions_are_drawn_from_the_dirichlet() -> None:
    """Each true row ~ Dir(796, 1, 1, 1, 1): over 400 seeds x 5 rows, the mean stay and move
    probabilities are within 4 SE of 796/800 and 1/800 (SE from the Beta variances)."""
    p = SyntheticParams(model="prior")
    phi = np.stack([_draw_parameters(p, seed).true_transitions for seed in range(400)])
    stay = np.diagonal(phi, axis1=1, axis2=2)
    move = phi[:, ~np.eye(5, dtype=bool)]
    n = stay.size
    assert abs(stay.mean() - 796 / 800) < 4 * np.sqrt(796 * 4 / (800**2 * 801) / n)
    assert abs(move.mean() - 1 / 800) < 4 * np.sqrt(799 / (800**2 * 801) / move.size)
    np.testing.assert_allclose(phi.sum(axis=2), 1.0)


def test_known_model_is_the_truth() -> None:
    world = Synthetic.build(SyntheticParams(horizon=300), SEEDS[:5])
    model = world.offline_model
    truth = np.take_along_axis(model.means, world.states[:, :, None], axis=1)
    np.testing.assert_array_equal(world.mean_rewards, truth)
    assert model.concentration is None and np.all(model.mean_sd == 0)
    assert np.all((model.means >= 0) & (model.means <= 1))


def test_prior_model_truth_is_drawn_from_the_prior() -> None:
    """(true - prior mean) / prior_sd ~ N(0, 1): mean within 4 SE, variance within 4 SE."""
    p = SyntheticParams(model="prior", horizon=2000, switch_prob=0.0)
    seeds = np.arange(200)
    world = Synthetic.build(p, seeds)
    model = world.offline_model
    first = world.states[:, 0]
    runs = np.arange(len(seeds))
    true_in_first_state = world.mean_rewards[:, 0, :]
    z = (true_in_first_state - model.means[runs, first]) / p.prior_sd
    n = z.size
    assert abs(z.mean()) < 4 / np.sqrt(n)
    assert abs(z.var() - 1) < 4 * np.sqrt(2 / n)
    np.testing.assert_allclose(model.transitions.sum(axis=2), 1.0)
    np.testing.assert_allclose(np.diagonal(model.transitions, axis1=1, axis2=2), 796 / 800)


def test_noise_is_gaussian_with_sigma() -> None:
    p = SyntheticParams(horizon=2000)
    noise = Synthetic.build(p, SEEDS).noise
    assert abs(noise.mean()) < 4 * p.sigma / np.sqrt(noise.size)
    assert abs(noise.std() - p.sigma) < 4 * p.sigma / np.sqrt(2 * noise.size)


def test_world_of_a_seed_does_not_depend_on_its_batch() -> None:
    p = SyntheticParams(model="prior", horizon=200)
    alone = Synthetic.build(p, np.array([9]))
    batch = Synthetic.build(p, np.array([3, 9, 4]))
    np.testing.assert_array_equal(alone.states[0], batch.states[1])
    np.testing.assert_array_equal(alone.noise[0], batch.noise[1])
    np.testing.assert_array_equal(alone.mean_rewards[0], batch.mean_rewards[1])
    np.testing.assert_array_equal(
        alone.offline_model.concentration[0], batch.offline_model.concentration[1]
    )
    assert not np.array_equal(batch.noise[0], batch.noise[1]), "seeds differ"


def test_longer_horizon_keeps_parameters_and_extends_the_path() -> None:
    short = Synthetic.build(SyntheticParams(horizon=100), SEEDS[:3])
    long = Synthetic.build(SyntheticParams(horizon=300), SEEDS[:3])
    np.testing.assert_array_equal(short.offline_model.means, long.offline_model.means)
    np.testing.assert_array_equal(short.states, long.states[:, :100])
    np.testing.assert_array_equal(short.noise, long.noise[:, :100])


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("dynamics", "sometimes"),
        ("model", "unknown"),
        ("horizon", 0),
        ("n_arms", 1),
        ("sigma", 0.0),
        ("switch_prob", 1.5),
        ("switch_prob", -0.1),
        ("prior_sd", -1.0),
        ("period", 0),
        ("reward", "poisson"),
        ("prior_strength", 0.0),
    ],
)
def test_invalid_parameters_are_refused_naming_the_field(field: str, value: object) -> None:
    with pytest.raises(ConfigError, match=f"^{field}: "):
        SyntheticParams(**{field: value})


def test_bernoulli_reward_is_one_uniform_below_the_mean() -> None:
    """``R_t = 1[u_t < mu(A_t, S_t)]`` with one ``u_t ~ U(0, 1)`` per round: every arm's
    reward in a round comes from the same ``u_t``, and the rewards are clicks."""
    world = Synthetic.build(SyntheticParams(reward="bernoulli", horizon=500), SEEDS[:4])
    assert world.problem.sigma == 0.5
    u = world.noise
    assert u.min() >= 0.0 and u.max() < 1.0
    assert abs(u.mean() - 0.5) < 4 * np.sqrt(1 / 12 / u.size)
    for arm in range(world.problem.n_arms):
        actions = np.full(4, arm)
        for t in (0, 17, 499):
            expected = (u[:, t] < world.mean_rewards[:, t, arm]).astype(float)
            np.testing.assert_array_equal(world.reward(t, actions), expected)


def test_bernoulli_click_rate_is_the_mean() -> None:
    """Over 40 seeds x 2000 rounds of arm 0, the click rate minus the mean reward is within
    4 SE of 0 (SE from the Bernoulli variances)."""
    world = Synthetic.build(SyntheticParams(reward="bernoulli"), SEEDS)
    mu = world.mean_rewards[:, :, 0]
    clicks = np.stack([world.reward(t, np.zeros(len(SEEDS), dtype=np.int64)) for t in range(2000)])
    se = np.sqrt((mu * (1 - mu)).sum()) / mu.size
    assert abs(clicks.mean() - mu.mean()) < 4 * se


def test_reward_model_changes_only_the_noise_of_a_known_world() -> None:
    """With a known model the means and the path of a seed do not depend on env.reward."""
    gaussian = Synthetic.build(SyntheticParams(horizon=300), SEEDS[:5])
    bernoulli = Synthetic.build(SyntheticParams(horizon=300, reward="bernoulli"), SEEDS[:5])
    np.testing.assert_array_equal(gaussian.states, bernoulli.states)
    np.testing.assert_array_equal(gaussian.mean_rewards, bernoulli.mean_rewards)
    assert not np.array_equal(gaussian.noise, bernoulli.noise)


def test_bernoulli_prior_truth_is_drawn_from_the_beta_prior() -> None:
    """True mu ~ Beta(c m, c (1 - m)) around the prior mean m, c = prior_strength: the agents'
    ``mean_sd`` is that Beta's sd, sqrt(m (1 - m) / (c + 1)); over 200 seeds x 5 arms the
    standardised errors (true - m) / sd have mean 0 and variance 1, each within 4 SE."""
    p = SyntheticParams(model="prior", reward="bernoulli", prior_strength=4.0, switch_prob=0.0)
    world = Synthetic.build(p, np.arange(200))
    model = world.offline_model
    m = model.means[np.arange(200), world.states[:, 0]]
    sd = model.mean_sd[np.arange(200), world.states[:, 0]]
    np.testing.assert_allclose(sd, np.sqrt(m * (1 - m) / (p.prior_strength + 1)), rtol=1e-12)
    truth = world.mean_rewards[:, 0, :]
    assert np.all((truth >= 0) & (truth <= 1))
    z = (truth - m) / sd
    assert abs(z.mean()) < 4 / np.sqrt(z.size)
    # Var(z^2) = E z^4 - 1 for the standardised Beta, estimated from the sample.
    assert abs((z**2).mean() - 1) < 4 * (z**2).std(ddof=1) / np.sqrt(z.size)
