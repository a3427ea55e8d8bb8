"""BOCD-TS: the run-length posterior against brute force, its limits, its pruning, its play."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from nslb_cli.agents.bocd import (
    BOCDThompsonSampling,
    BOCDThompsonSamplingParams,
    default_prior,
)
from nslb_cli.agents.reference import UniformRandom
from nslb_cli.bandit import reward_kernels
from nslb_cli.bandit.rng import BatchRNG
from nslb_cli.common.errors import ConfigError
from nslb_cli.runner.simulate import build_agent, simulate
from tests.helpers.reference_kernels import run_length_posterior
from tests.helpers.worlds import synthetic_world

REWARDS = ["gaussian", "bernoulli"]


def agent_for(world: object, seeds: list[int], **values: object) -> BOCDThompsonSampling:
    params = BOCDThompsonSamplingParams(**values)  # type: ignore[arg-type]
    return build_agent(BOCDThompsonSampling, params, world, BatchRNG(seeds))


def log_marginal(rewards: list[float], reward: str, sigma: float) -> float:
    """log p(rewards) of one arm in one segment under the default prior, in closed form:
    Beta(1, 1): s! f! / (s + f + 1)!; N(0, sigma^2) prior of a N(mu, sigma^2) reward: the
    rewards are jointly N(0, sigma^2 (I + 1 1'))."""
    m = len(rewards)
    if m == 0:
        return 0.0
    if reward == "bernoulli":
        s = int(sum(rewards))
        return math.lgamma(s + 1) + math.lgamma(m - s + 1) - math.lgamma(m + 2)
    x = np.asarray(rewards)
    cov = sigma**2 * (np.eye(m) + np.ones((m, m)))
    _, logdet = np.linalg.slogdet(cov)
    return float(-0.5 * (m * math.log(2 * math.pi) + logdet + x @ np.linalg.solve(cov, x)))


def brute_force(actions: list[int], rewards: list[float], hazard: float, reward: str, K: int,
                sigma: float) -> np.ndarray:  # fmt: skip
    """P(l_{t+1} = l | rounds 0 … t), l = 0 … t + 1, by enumerating every configuration of
    change points at the t + 1 boundaries (between rounds and after the last), each weighed
    by its prior and the closed-form marginal likelihood of its segments."""
    t = len(actions) - 1
    posterior = np.zeros(t + 2)
    for changes in itertools.product([0, 1], repeat=t + 1):  # boundary i before round i + 1
        prior = math.prod(hazard if c else 1.0 - hazard for c in changes)
        if prior == 0.0:
            continue
        starts = [0] + [i + 1 for i, c in enumerate(changes[:t]) if c]
        ends = starts[1:] + [t + 1]
        log_likelihood = sum(
            log_marginal([rewards[s] for s in range(begin, end) if actions[s] == a], reward, sigma)
            for begin, end in zip(starts, ends, strict=True)
            for a in range(K)
        )
        last = t + 1 if changes[t] else starts[-1]
        posterior[t + 1 - last] += prior * math.exp(log_likelihood)
    return posterior / posterior.sum()


@pytest.mark.parametrize("reward", REWARDS)
@pytest.mark.parametrize("hazard", [0.1, 0.4])
def test_the_run_length_posterior_is_the_brute_force_one(reward: str, hazard: float) -> None:
    world = synthetic_world([0], reward=reward, n_arms=2, horizon=8)
    agent = agent_for(world, [0], hazard=hazard, min_mass=0.0)
    rng = np.random.default_rng(3)
    actions = rng.integers(0, 2, 8).tolist()
    if reward == "bernoulli":
        rewards = rng.integers(0, 2, 8).astype(float).tolist()
    else:
        rewards = (rng.normal(0, 1, 8) + 2.0 * (np.arange(8) >= 4)).tolist()
    assert run_length_posterior(agent, 0).tolist() == [[1.0]]
    for t in range(8):
        agent.update(t, None, np.array([actions[t]]), np.array([rewards[t]]))
        expected = brute_force(actions[: t + 1], rewards[: t + 1], hazard, reward, 2, 0.5)
        np.testing.assert_allclose(run_length_posterior(agent, t + 1)[0], expected, rtol=1e-9)


@pytest.mark.parametrize("reward", REWARDS)
def test_hazard_zero_keeps_the_stationary_posterior(reward: str) -> None:
    """One hypothesis, every arm's conjugate posterior of all its rewards (the reward model's
    own updates from the default prior)."""
    seeds = [0, 1, 2]
    world = synthetic_world(seeds, dynamics="fixed", reward=reward, horizon=300)
    agent = agent_for(world, seeds, hazard=0.0)
    trace = simulate(world, agent, progress=False)
    model = world.problem.reward_model
    prior = default_prior(model)
    assert agent.count.tolist() == [1, 1, 1] and np.all(agent.mass[:, 0] == 1.0)
    for r in range(3):
        for a in range(5):
            stats = (np.array(prior[0]), np.array(prior[1]))
            for x in trace.reward[r][trace.action[r] == a]:
                stats = model.update(stats, np.array(x))
            assert (agent.first[r, 0, a], agent.second[r, 0, a]) == (stats[0], stats[1])
    assert agent.summary()["detections"].tolist() == [0, 0, 0]


@pytest.mark.parametrize("reward", REWARDS)
def test_the_default_prior_is_that_of_sample_given_sums(reward: str) -> None:
    """Drawing from default_prior's statistics draws what sample_given_sums draws for an arm
    never pulled (the prior of CD-TS, D-TS, SW-TS)."""
    world = synthetic_world([0], reward=reward, horizon=5)
    model = world.problem.reward_model
    first, second = default_prior(model)
    ours, theirs = BatchRNG([9]), BatchRNG([9])
    family = model.kernel[0]
    drawn = [reward_kernels.draw(family, ours.generators[0], first, second) for _ in range(5)]
    expected = model.sample_given_sums(np.zeros((1, 5)), np.zeros((1, 5)), theirs)[0]
    np.testing.assert_array_equal(drawn, expected)


@pytest.mark.parametrize("reward", REWARDS)
def test_posteriors_sum_to_one_and_pruning_drops_less_than_its_bound(reward: str) -> None:
    """Every round the kept run lengths carry probability one; the mass a round discards is
    below min_mass times the hypotheses discarded (the cap never binds here), and no kept
    hypothesis but the most probable had less than min_mass."""
    seeds, horizon, min_mass = [0, 1, 2, 3], 400, 1e-2
    world = synthetic_world(seeds, dynamics="fixed", reward=reward, horizon=horizon)
    agent = agent_for(world, seeds, min_mass=min_mass, max_hypotheses=1000)
    dropped_before = np.zeros(4)
    pruned = 0
    for t in range(horizon):
        actions = agent.act(t, None)
        live = agent.count.copy()
        agent.update(t, None, actions, world.reward(t, actions))
        discarded = live + 1 - agent.count  # one hypothesis is born each round
        dropped = agent.summary()["dropped_mass"] - dropped_before
        dropped_before += dropped
        assert np.all(dropped < np.maximum(discarded, 0) * min_mass + 1e-15)
        pruned += discarded.sum()
        posterior = run_length_posterior(agent, t + 1)
        np.testing.assert_allclose(posterior.sum(axis=1), 1.0, rtol=1e-12)
        assert np.all(posterior >= 0.0)
        for r in range(4):
            kept = agent.mass[r, : agent.count[r] - 1] / (1.0 - agent.hazard[r])
            assert np.sum(kept < min_mass * (1 - 1e-12)) <= 1
    assert pruned > horizon  # pruning did work


def test_the_cap_bounds_the_hypotheses() -> None:
    seeds = [0, 1]
    world = synthetic_world(seeds, dynamics="fixed", horizon=300)
    agent = agent_for(world, seeds, max_hypotheses=5, min_mass=0.0)
    for t in range(300):
        actions = agent.act(t, None)
        agent.update(t, None, actions, world.reward(t, actions))
        assert np.all(agent.count <= 5)
        np.testing.assert_allclose(run_length_posterior(agent, t + 1).sum(axis=1), 1.0)
    assert np.all(agent.summary()["mean_hypotheses"] > 4)


def test_the_default_hazard_is_the_models_change_rate() -> None:
    world = synthetic_world([0, 1], dynamics="fixed", horizon=2000)  # a change every 200
    agent = agent_for(world, [0, 1])
    np.testing.assert_allclose(agent.hazard, [1 / 200, 1 / 200])
    assert agent.summary()["hazard"].shape == (2,)


@pytest.mark.parametrize("reward", REWARDS)
def test_it_beats_uniform_play_and_detects_the_changes(reward: str) -> None:
    """Paired over 20 seeds of 600 rounds (changes at 200 and 400), the regret saved against
    uniform play exceeds four standard errors of the paired difference, and the most
    probable segment moves to a later start at least once in most runs."""
    seeds = list(range(20))
    world = synthetic_world(seeds, dynamics="fixed", reward=reward, horizon=600)
    agent = agent_for(world, seeds)
    ours = simulate(world, agent, progress=False).regret.sum(axis=1)
    uniform = simulate(
        world, build_agent(UniformRandom, UniformRandom.Params(), world, BatchRNG(seeds)),
        progress=False,
    ).regret.sum(axis=1)  # fmt: skip
    saved = uniform - ours
    assert saved.mean() > 4 * saved.std(ddof=1) / np.sqrt(len(seeds))
    summary = agent.summary()
    assert np.mean(summary["detections"] >= 1) > 0.5
    assert np.all(summary["dropped_mass"] < 1.0)


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"hazard": 1.5}, "hazard: must be in [0, 1]"),
        ({"max_hypotheses": 1}, "max_hypotheses: must be >= 2"),
        ({"min_mass": -0.1}, "min_mass: must be in [0, 1]"),
        ({"min_mass": 1.0}, "min_mass: must be < 1"),
    ],
)
def test_bad_values_are_refused_in_one_line(values: dict, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        BOCDThompsonSamplingParams(**values)
    assert message in str(err.value) and "\n" not in str(err.value)
