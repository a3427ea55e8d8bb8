"""D-TS and SW-TS: their exact limits, their statistics, their defaults, and that they learn."""

from __future__ import annotations

import numpy as np
import pytest

from nslb_cli.agents.changepoint import CDTS, CDTSParams
from nslb_cli.agents.reference import UniformRandom
from nslb_cli.agents.switching_ts import (
    DiscountedThompsonSampling,
    DiscountedThompsonSamplingParams,
    SlidingWindowThompsonSampling,
    SlidingWindowThompsonSamplingParams,
    default_window,
    draw_given_sums,
)
from nslb_cli.bandit.rng import BatchRNG
from nslb_cli.common.errors import ConfigError
from nslb_cli.runner.simulate import build_agent, simulate
from tests.helpers.worlds import synthetic_world

REWARDS = ["gaussian", "bernoulli"]


def play(cls: type, params: object, world: object, seeds: list[int]) -> object:
    return simulate(world, build_agent(cls, params, world, BatchRNG(seeds)), progress=False)


@pytest.mark.parametrize("reward", REWARDS)
def test_the_compiled_draw_is_sample_given_sums(reward: str) -> None:
    """draw_given_sums draws the very numbers of RewardModel.sample_given_sums."""
    world = synthetic_world([0], reward=reward, horizon=5)
    model = world.problem.reward_model
    family = model.kernel[0]
    pulls = np.array([[0.0, 1.0, 3.7, 12.0, 250.5]])
    sums = pulls * np.array([[0.0, 1.0, 0.3, 0.55, 0.9]])
    ours, theirs = BatchRNG([3]), BatchRNG([3])
    for _ in range(20):
        compiled = [
            draw_given_sums(family, world.problem.sigma, p, y, ours.generators[0])
            for p, y in zip(pulls[0], sums[0], strict=True)
        ]
        np.testing.assert_array_equal(compiled, model.sample_given_sums(pulls, sums, theirs)[0])


@pytest.mark.parametrize("reward", REWARDS)
@pytest.mark.parametrize("forgetful", ["d_ts", "sw_ts", "sw_ts_huge"])
def test_without_forgetting_both_are_stationary_thompson_sampling(
    forgetful: str, reward: str
) -> None:
    """D-TS with gamma = 1 and SW-TS with a window of the horizon or more play exactly as
    CD-TS whose detector never fires (its window, longer than the horizon, never fills):
    the same draws from the same streams, the same arms, round by round."""
    seeds, horizon = [0, 1, 2, 3], 300
    world = synthetic_world(seeds, dynamics="fixed", reward=reward, horizon=horizon)
    reference = play(CDTS, CDTSParams(name="cd_ts", tau=horizon + 2), world, seeds)
    if forgetful == "d_ts":
        cls, params = DiscountedThompsonSampling, DiscountedThompsonSamplingParams(gamma=1.0)
    else:
        window = horizon if forgetful == "sw_ts" else 10**15
        cls = SlidingWindowThompsonSampling
        params = SlidingWindowThompsonSamplingParams(tau=window)
    trace = play(cls, params, world, seeds)
    np.testing.assert_array_equal(trace.action, reference.action)
    assert len(np.unique(trace.action)) > 1  # it did explore


def replay(agent: object, actions: np.ndarray, rewards: np.ndarray) -> None:
    for t in range(actions.shape[1]):
        agent.update(t, None, actions[:, t], rewards[:, t])


@pytest.mark.parametrize("gamma", [0.9, 0.5, 1.0])
def test_discounted_counts_are_the_discounted_sums_of_past_rewards(gamma: float) -> None:
    """W_k = sum_s gamma^(t - s) 1[A_s = k] and Y_k = sum_s gamma^(t - s) 1[A_s = k] R_s."""
    seeds, horizon = [0, 1], 60
    world = synthetic_world(seeds, horizon=horizon)
    rng = np.random.default_rng(1)
    actions = rng.integers(0, 5, (2, horizon))
    rewards = rng.normal(0.5, 1.0, (2, horizon))
    params = DiscountedThompsonSamplingParams(gamma=gamma)
    agent = build_agent(DiscountedThompsonSampling, params, world, BatchRNG(seeds))
    replay(agent, actions, rewards)
    age = gamma ** (horizon - 1 - np.arange(horizon))
    pulled = actions[:, :, None] == np.arange(5)
    np.testing.assert_allclose(agent.pulls, (age[:, None] * pulled).sum(axis=1), rtol=1e-12)
    expected = (age[:, None] * pulled * rewards[:, :, None]).sum(axis=1)
    np.testing.assert_allclose(agent.sums, expected, rtol=1e-12, atol=1e-12)


def test_the_compiled_discount_is_the_numpy_recursion_bit_for_bit() -> None:
    """The compiled update does the very arithmetic of ``W <- gamma W + 1[A = k]`` in numpy
    (so moving it to compiled code changed no run's numbers)."""
    seeds, horizon, gamma = [0, 1, 2], 200, 0.95
    world = synthetic_world(seeds, horizon=horizon)
    rng = np.random.default_rng(4)
    actions = rng.integers(0, 5, (3, horizon))
    rewards = rng.normal(0.5, 1.0, (3, horizon))
    params = DiscountedThompsonSamplingParams(gamma=gamma)
    agent = build_agent(DiscountedThompsonSampling, params, world, BatchRNG(seeds))
    replay(agent, actions, rewards)
    pulls, sums, runs = np.zeros((3, 5)), np.zeros((3, 5)), np.arange(3)
    for t in range(horizon):
        pulls *= gamma
        sums *= gamma
        pulls[runs, actions[:, t]] += 1.0
        sums[runs, actions[:, t]] += rewards[:, t]
    np.testing.assert_array_equal(agent.pulls, pulls)
    np.testing.assert_array_equal(agent.sums, sums)


@pytest.mark.parametrize("cls", [DiscountedThompsonSampling, SlidingWindowThompsonSampling])
def test_arm_switches_count_the_rounds_whose_arm_differs_from_the_last(cls: type) -> None:
    seeds, horizon = [0, 1, 2], 80
    world = synthetic_world(seeds, horizon=horizon)
    rng = np.random.default_rng(5)
    actions = rng.integers(0, 3, (3, horizon))  # repeats as well as switches
    agent = build_agent(cls, cls.Params(), world, BatchRNG(seeds))
    replay(agent, actions, rng.normal(0.5, 1.0, (3, horizon)))
    expected = (np.diff(actions, axis=1) != 0).sum(axis=1)
    assert expected.min() > 0 and expected.max() < horizon - 1
    np.testing.assert_array_equal(agent.summary()["arm_switches"], expected)


def test_the_window_holds_the_last_tau_rounds() -> None:
    seeds, horizon, tau = [0, 1], 50, 7
    world = synthetic_world(seeds, horizon=horizon)
    rng = np.random.default_rng(2)
    actions = rng.integers(0, 5, (2, horizon))
    rewards = rng.normal(0.5, 1.0, (2, horizon))
    params = SlidingWindowThompsonSamplingParams(tau=tau)
    agent = build_agent(SlidingWindowThompsonSampling, params, world, BatchRNG(seeds))
    for t in range(horizon):
        agent.update(t, None, actions[:, t], rewards[:, t])
        recent = slice(max(0, t + 1 - tau), t + 1)
        pulled = actions[:, recent, None] == np.arange(5)
        np.testing.assert_array_equal(agent.pulls, pulled.sum(axis=1))
        expected = (pulled * rewards[:, recent, None]).sum(axis=1)
        np.testing.assert_allclose(agent.sums, expected, atol=1e-12)
    assert agent.summary()["tau"].tolist() == [tau, tau]


def test_the_prior_parameters_are_the_papers_beta() -> None:
    """With clicks, D-TS draws theta_k ~ Beta(alpha0 + S_k, beta0 + F_k) (the paper's rule),
    from the run's generator in arm order."""
    seeds, horizon, gamma, alpha0, beta0 = [4, 5], 80, 0.8, 2.0, 3.0
    world = synthetic_world(seeds, dynamics="fixed", reward="bernoulli", horizon=horizon)
    params = DiscountedThompsonSamplingParams(gamma=gamma, alpha0=alpha0, beta0=beta0)
    agent = build_agent(DiscountedThompsonSampling, params, world, BatchRNG(seeds))
    generators = BatchRNG(seeds).generators
    successes, failures = np.zeros((2, 5)), np.zeros((2, 5))
    for t in range(horizon):
        actions = agent.act(t, None)
        theta = np.stack([g.beta(alpha0 + s, beta0 + f) for g, s, f in
                          zip(generators, successes, failures, strict=True)])  # fmt: skip
        np.testing.assert_array_equal(actions, theta.argmax(axis=1))
        rewards = world.reward(t, actions)
        successes *= gamma
        failures *= gamma
        successes[[0, 1], actions] += rewards
        failures[[0, 1], actions] += 1.0 - rewards
        agent.update(t, None, actions, rewards)


def test_the_default_window_follows_the_horizon_and_the_changes() -> None:
    world = synthetic_world([0, 1], dynamics="fixed")  # n = 2000, a change every 200 rounds
    window = default_window(world.problem, world.offline_model)
    assert window.tolist() == [39, 39]  # ceil(sqrt(2000 log 2000 / 10))
    still = synthetic_world([0], dynamics="markov", switch_prob=0.0, horizon=300)
    assert default_window(still.problem, still.offline_model).tolist() == [300]


@pytest.mark.parametrize("reward", REWARDS)
@pytest.mark.parametrize("cls", [DiscountedThompsonSampling, SlidingWindowThompsonSampling])
def test_each_beats_uniform_play_on_the_fixed_scenario(cls: type, reward: str) -> None:
    """Paired over 20 seeds of 600 rounds (three segments), the regret saved against uniform
    play exceeds four standard errors of the paired difference."""
    seeds = list(range(20))
    world = synthetic_world(seeds, dynamics="fixed", reward=reward, horizon=600)
    ours = play(cls, cls.Params(), world, seeds).regret.sum(axis=1)
    uniform = play(UniformRandom, UniformRandom.Params(), world, seeds).regret.sum(axis=1)
    saved = uniform - ours
    assert saved.mean() > 4 * saved.std(ddof=1) / np.sqrt(len(seeds))


def test_summaries_are_per_run() -> None:
    seeds = [0, 1, 2]
    world = synthetic_world(seeds, horizon=100)
    for cls in (DiscountedThompsonSampling, SlidingWindowThompsonSampling):
        agent = build_agent(cls, cls.Params(), world, BatchRNG(seeds))
        simulate(world, agent, progress=False)
        summary = agent.summary()
        assert all(value.shape == (3,) for value in summary.values())
        assert np.all((summary["arm_switches"] > 0) & (summary["arm_switches"] < 100))
    default = build_agent(DiscountedThompsonSampling, DiscountedThompsonSamplingParams(), world,
                          BatchRNG(seeds))  # fmt: skip
    assert default.summary()["gamma"].tolist() == [0.95] * 3


@pytest.mark.parametrize(
    ("params", "values", "message"),
    [
        (DiscountedThompsonSamplingParams, {"gamma": 0.0}, "gamma: must be in (0, 1]"),
        (DiscountedThompsonSamplingParams, {"gamma": 1.5}, "gamma: must be in (0, 1]"),
        (DiscountedThompsonSamplingParams, {"alpha0": 1e-3}, "alpha0: must be >= 0.01"),
        (DiscountedThompsonSamplingParams, {"alpha0": 0.5, "beta0": 0.5}, "must exceed 1"),
        (SlidingWindowThompsonSamplingParams, {"tau": 0}, "tau: must be a positive"),
    ],
)
def test_bad_values_are_refused_in_one_line(params: type, values: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=None) as err:
        params(**values)
    assert message in str(err.value) and "\n" not in str(err.value)
