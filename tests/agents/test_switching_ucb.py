"""SW-UCB and D-UCB (Garivier & Moulines, 2011): the paper's definitions, limits, invariants.

The references below recompute every index from the whole history as the paper defines it
(window or discounted sums over past rounds, no running statistics), so they check the
agents' ring buffers, running sums and per-round discounting independently.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

import numpy as np
import pytest

from nslb_cli.agents import AGENTS
from nslb_cli.agents.base import Agent
from nslb_cli.agents.switching_ucb import DiscountedUCB, SlidingWindowUCB
from nslb_cli.bandit.rng import BatchRNG
from nslb_cli.bandit.world import World
from nslb_cli.common.errors import ConfigError
from nslb_cli.envs.synthetic import SyntheticParams, uniform_switching
from nslb_cli.runner.simulate import build_agent
from tests.helpers.agents import agent_params, run_agent
from tests.helpers.worlds import hand_made_world, synthetic_world

Index = Callable[[int, int, np.ndarray, np.ndarray], np.ndarray]
"""``(run, t, past arms, past rewards) -> (K,)`` indices, ``inf`` for an arm to play first."""


def play(agent: Agent, world: World, check: Callable[[int], None] | None = None) -> np.ndarray:
    """The agent's actions ``(R, n)`` in ``world``; ``check(t)`` after each update."""
    R, n = world.states.shape
    actions = np.zeros((R, n), dtype=np.int64)
    for t in range(n):
        actions[:, t] = agent.act(t, None)
        agent.update(t, None, actions[:, t], world.reward(t, actions[:, t]))
        if check is not None:
            check(t)
    return actions


def play_index(world: World, index: Index) -> np.ndarray:
    """The actions ``(R, n)`` of the policy ``argmax index`` (lowest arm on ties)."""
    R, n = world.states.shape
    actions = np.zeros((R, n), dtype=np.int64)
    rewards = np.zeros((R, n))
    for t in range(n):
        for r in range(R):
            actions[r, t] = np.argmax(index(r, t, actions[r, :t], rewards[r, :t]))
        rewards[:, t] = world.reward(t, actions[:, t])
    return actions


def sliding_window_index(tau: np.ndarray, B: float, xi: float, K: int) -> Index:
    """The paper's SW-UCB index over the last ``tau[r]`` rounds, from the history."""

    def index(r: int, t: int, arms: np.ndarray, rewards: np.ndarray) -> np.ndarray:
        start = max(0, t - int(tau[r]))
        window, x = arms[start:], rewards[start:]
        N = np.array([np.sum(window == i) for i in range(K)], dtype=float)
        if t == 0 or N.min() == 0:
            return np.where(N == 0, np.inf, 0.0)
        mean = np.array([x[window == i].sum() for i in range(K)]) / N
        return mean + B * np.sqrt(xi * math.log(min(t, int(tau[r]))) / N)

    return index


def discounted_index(gamma: float, B: float, xi: float, K: int) -> Index:
    """The paper's D-UCB index with weights ``gamma^(t - 1 - s)``, from the history."""

    def index(r: int, t: int, arms: np.ndarray, rewards: np.ndarray) -> np.ndarray:
        weights = gamma ** np.arange(t - 1, -1, -1, dtype=float)
        N = np.array([weights[arms == i].sum() for i in range(K)])
        if N.min() == 0:
            return np.where(N == 0, np.inf, 0.0)
        mean = np.array([(weights * rewards)[arms == i].sum() for i in range(K)]) / N
        return mean + 2 * B * np.sqrt(xi * math.log(N.sum()) / N)

    return index


def plain_ucb_actions(world: World, width: float) -> np.ndarray:
    """UCB on every past reward: ``argmax mean + width sqrt(log t / N)``, unplayed arms
    first (lowest first)."""
    R, n = world.states.shape
    K = world.problem.n_arms
    counts, sums = np.zeros((R, K)), np.zeros((R, K))
    actions = np.zeros((R, n), dtype=np.int64)
    runs = np.arange(R)
    for t in range(n):
        with np.errstate(divide="ignore", invalid="ignore"):
            index = sums / counts + width * np.sqrt(math.log(max(t, 1)) / counts)
        actions[:, t] = np.where(counts == 0, np.inf, index).argmax(axis=1)
        counts[runs, actions[:, t]] += 1
        sums[runs, actions[:, t]] += world.reward(t, actions[:, t])
    return actions


def switching_world(runs: int = 3, horizon: int = 300, seed: int = 1) -> World:
    """Three arms whose best changes every 60 rounds (Gaussian, sigma = 0.5)."""
    means = np.array([[0.9, 0.5, 0.1], [0.1, 0.4, 0.8], [0.5, 0.9, 0.3]])
    states = np.broadcast_to((np.arange(horizon) // 60) % 3, (runs, horizon)).copy()
    return hand_made_world(means, states, means, sigma=0.5, seed=seed)


def build(name: str, world: World, **overrides: object) -> Agent:
    R = world.problem.n_runs
    return build_agent(AGENTS[name], agent_params(name, **overrides), world, BatchRNG(range(R)))


# The paper's definitions, recomputed from the history.


@pytest.mark.parametrize("tau", [1, 2, 7, 50, 299, 300, 10_000])
def test_sw_ucb_plays_the_papers_index_over_the_window(tau: int) -> None:
    world = switching_world()
    agent = build("sw_ucb", world, tau=tau, xi=0.6, bound=1.0)
    taus = np.full(3, min(tau, 300))
    expected = play_index(world, sliding_window_index(taus, 1.0, 0.6, 3))
    np.testing.assert_array_equal(play(agent, world), expected)


@pytest.mark.parametrize("gamma", [0.5, 0.9, 0.99, 1.0])
def test_d_ucb_plays_the_papers_discounted_index(gamma: float) -> None:
    world = switching_world()
    agent = build("d_ucb", world, gamma=gamma, xi=0.6, bound=1.0)
    expected = play_index(world, discounted_index(gamma, 1.0, 0.6, 3))
    np.testing.assert_array_equal(play(agent, world), expected)


@pytest.mark.parametrize("name", ["sw_ucb", "d_ucb"])
def test_bernoulli_rewards_follow_the_same_definitions(name: str) -> None:
    # Clicks tie often (equal counts and sums in a window): the lowest arm wins in both.
    world = synthetic_world([0, 1, 2], reward="bernoulli", horizon=300, n_arms=4)
    if name == "sw_ucb":
        agent = build(name, world, tau=40)
        index = sliding_window_index(np.full(3, 40), 1.0, 0.6, 4)
    else:
        agent = build(name, world, gamma=0.95)
        index = discounted_index(0.95, 1.0, 0.6, 4)
    np.testing.assert_array_equal(play(agent, world), play_index(world, index))


def test_each_run_keeps_its_own_window() -> None:
    # Expected changes differ per run, so the default tau does: 2 sqrt(T log T / (p T)).
    world = switching_world(runs=3)
    stay = np.stack([uniform_switching(3, p) for p in (0.5, 0.05, 0.005)])
    world = replace(world, offline_model=replace(world.offline_model, transitions=stay))
    agent = build("sw_ucb", world, bound=1.0)
    T = 300
    taus = np.floor([2 * math.sqrt(T * math.log(T) / (p * T)) for p in (0.5, 0.05, 0.005)])
    np.testing.assert_array_equal(agent.summary()["tau"], np.minimum(taus, T))
    expected = play_index(world, sliding_window_index(agent.summary()["tau"], 1.0, 0.6, 3))
    actions = play(agent, world)
    np.testing.assert_array_equal(actions, expected)
    for r in range(3):  # alone, each run plays what it played in the batch
        alone = replace(
            world,
            seeds=world.seeds[r : r + 1],
            states=world.states[r : r + 1],
            mean_rewards=world.mean_rewards[r : r + 1],
            noise=world.noise[r : r + 1],
            offline_model=replace(
                world.offline_model,
                means=world.offline_model.means[r : r + 1],
                mean_sd=world.offline_model.mean_sd[r : r + 1],
                transitions=stay[r : r + 1],
                initial=world.offline_model.initial[r : r + 1],
            ),
            problem=replace(world.problem, n_runs=1),
        )
        np.testing.assert_array_equal(play(build("sw_ucb", alone, bound=1.0), alone)[0], actions[r])


# Limit cases: no forgetting is plain UCB.


def test_sw_ucb_with_a_window_of_the_horizon_is_plain_ucb() -> None:
    world = switching_world(runs=4, horizon=400, seed=3)
    for tau in (400, 10**9):
        agent = build("sw_ucb", world, tau=tau, xi=0.6, bound=1.0)
        # B sqrt(xi log(min(t, tau)) / N) = sqrt(0.6) sqrt(log t / N) when tau >= t.
        np.testing.assert_array_equal(play(agent, world), plain_ucb_actions(world, math.sqrt(0.6)))


def test_d_ucb_without_discount_is_plain_ucb() -> None:
    world = switching_world(runs=4, horizon=400, seed=3)
    agent = build("d_ucb", world, gamma=1.0, xi=0.6, bound=1.0)
    # n_t(1) = t: 2 B sqrt(xi log t / N).
    np.testing.assert_array_equal(play(agent, world), plain_ucb_actions(world, 2 * math.sqrt(0.6)))


# Closed forms on hand-made worlds.


@pytest.mark.parametrize("tau", [1, 5, 64])
def test_sw_ucb_returns_to_a_hopeless_arm_once_per_window(tau: int) -> None:
    # Means 1 and 0, noise 1e-9 and a negligible bonus (B = 1e-6): the bad arm is played
    # when it has left the window, i.e. in rounds 1, tau + 2, 2 tau + 3, ... (0-based):
    # t = 1 mod (tau + 1). Its regret is the number of such rounds.
    horizon = 500
    means = np.array([[1.0, 0.0]])
    world = hand_made_world(means, np.zeros((2, horizon), dtype=np.int64), means, sigma=1e-9)
    actions = play(build("sw_ucb", world, tau=tau, bound=1e-6), world)
    t = np.arange(horizon)
    np.testing.assert_array_equal(actions, np.broadcast_to(t % (tau + 1) == 1, (2, horizon)))


@pytest.mark.parametrize("gamma", [0.3, 0.9, 0.999])
def test_d_ucb_cycles_through_equal_arms(gamma: float) -> None:
    # Equal constant rewards: the arm played longest ago has the smallest discounted count,
    # hence the largest bonus, so D-UCB plays the arms in turn: A_t = t mod K. Discounting
    # only the pulled arm (SMPyBandits' lazy update) would leave the counts equal and break
    # the cycle.
    horizon, K = 200, 4
    means = np.full((1, K), 0.5)
    world = hand_made_world(means, np.zeros((2, horizon), dtype=np.int64), means, sigma=1e-12)
    actions = play(build("d_ucb", world, gamma=gamma, bound=1.0), world)
    np.testing.assert_array_equal(actions, np.broadcast_to(np.arange(horizon) % K, (2, horizon)))


# Invariants.


def test_window_counts_cover_the_last_tau_rounds() -> None:
    world = switching_world(runs=3, horizon=250)
    agent = build("sw_ucb", world, tau=40)
    assert isinstance(agent, SlidingWindowUCB)

    def check(t: int) -> None:
        assert np.all(agent.counts <= 40)
        np.testing.assert_array_equal(agent.counts.sum(axis=1), min(t + 1, 40))
        np.testing.assert_array_equal(agent.counts, agent.counts.round())

    actions = play(agent, world, check)
    window = actions[:, -40:]
    np.testing.assert_array_equal(agent.counts, (window[:, :, None] == np.arange(3)).sum(axis=1))
    rewards = np.stack([world.reward(t, actions[:, t]) for t in range(210, 250)], axis=1)
    sums = ((window[:, :, None] == np.arange(3)) * rewards[:, :, None]).sum(axis=1)
    np.testing.assert_allclose(agent.sums, sums, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("gamma", [0.5, 0.9, 0.99, 1.0])
def test_discounted_counts_sum_to_the_discounted_number_of_rounds(gamma: float) -> None:
    world = switching_world(runs=3, horizon=250)
    agent = build("d_ucb", world, gamma=gamma)
    assert isinstance(agent, DiscountedUCB)

    def check(t: int) -> None:
        rounds = np.sum(gamma ** np.arange(t + 1, dtype=float))  # sum_{k=0}^{t} gamma^k
        np.testing.assert_allclose(agent.counts.sum(axis=1), rounds, rtol=1e-12)
        np.testing.assert_allclose(agent.total, rounds, rtol=1e-12)

    play(agent, world, check)


def test_d_ucb_stays_finite_when_counts_underflow() -> None:
    # gamma = 0.01 and a tiny bonus: a bad arm's count decays below the smallest double
    # (0.01^162) before its bonus can pay for the gap, so it reaches 0 and the arm is
    # played as a never-played arm would be. No division by zero or nan surfaces.
    horizon = 2000
    means = np.array([[1.0, 0.0]])
    world = hand_made_world(means, np.zeros((2, horizon), dtype=np.int64), means, sigma=1e-9)
    agent = build("d_ucb", world, gamma=0.01, bound=1e-300)
    assert isinstance(agent, DiscountedUCB)
    with np.errstate(divide="raise", over="raise", invalid="raise"):
        actions = play(agent, world)
    returns = np.flatnonzero(actions[0] == 1)
    assert returns[0] == 1 and len(returns) > 5  # played again, every ~160 rounds
    np.testing.assert_array_equal(actions[0], actions[1])


# Defaults: the paper's tuning from the horizon and the expected number of changes.


@pytest.mark.parametrize("reward", ["gaussian", "bernoulli"])
def test_defaults_are_the_papers_tuning(reward: str) -> None:
    # Synthetic presets: T = 2000, a change every 200 rounds (Upsilon_T = 10), B = 2 sigma = 1
    # (sigma = 0.5, or 1/2 for clicks).
    world = synthetic_world([0, 1], dynamics="fixed", reward=reward)
    assert world.problem.sigma == 0.5
    tau = build("sw_ucb", world).summary()["tau"]
    gamma = build("d_ucb", world).summary()["gamma"]
    np.testing.assert_array_equal(tau, math.floor(2 * math.sqrt(2000 * math.log(2000) / 10)))
    assert tau[0] == 77
    np.testing.assert_allclose(gamma, 1 - math.sqrt(10 / 2000) / 4, rtol=1e-14)


def test_defaults_follow_the_reward_scale_and_their_limits() -> None:
    # B = 2 sigma: sigma = 2 widens the window fourfold (capped at the horizon).
    world = synthetic_world([0], dynamics="fixed", sigma=2.0)
    assert build("sw_ucb", world).summary()["tau"][0] == math.floor(
        8 * math.sqrt(2000 * math.log(2000) / 10)
    )
    np.testing.assert_allclose(
        build("d_ucb", world).summary()["gamma"], 1 - math.sqrt(10 / 2000) / 16
    )
    # No change expected: an endless window, no discount.
    means = np.array([[0.2, 0.8]])
    stationary = hand_made_world(means, np.zeros((1, 50), dtype=np.int64), means, 0.5, 0, 0.0)
    assert build("sw_ucb", stationary).summary()["tau"][0] == 50
    assert build("d_ucb", stationary).summary()["gamma"][0] == 1.0
    # A tiny B: the window shrinks to one round, the discount stops at 1/2.
    assert build("sw_ucb", world, bound=1e-6).summary()["tau"][0] == 1
    assert build("d_ucb", world, bound=1e-3).summary()["gamma"][0] == 0.5


# Performance: better than uniform play, for both reward models.


@pytest.mark.parametrize("reward", ["gaussian", "bernoulli"])
@pytest.mark.parametrize("name", ["sw_ucb", "d_ucb"])
def test_better_than_random_on_the_fixed_scenario(name: str, reward: str) -> None:
    # Paired by seed (same worlds): the mean regret gap must exceed 4 standard errors.
    # Measured: random about 670, sw_ucb 250-280, d_ucb about 430.
    env = SyntheticParams(dynamics="fixed", reward=reward)
    seeds = np.arange(20)
    ours = run_agent(name, seeds, env).regret.sum(axis=1)
    uniform = run_agent("random", seeds, env).regret.sum(axis=1)
    gap = uniform - ours
    assert gap.mean() > 4 * gap.std(ddof=1) / math.sqrt(len(gap))


# Parameters.


@pytest.mark.parametrize(
    ("name", "overrides", "key"),
    [
        ("sw_ucb", {"tau": 0}, "tau"),
        ("sw_ucb", {"tau": -5}, "tau"),
        ("sw_ucb", {"xi": 0.0}, "xi"),
        ("sw_ucb", {"bound": -1.0}, "bound"),
        ("d_ucb", {"gamma": 0.0}, "gamma"),
        ("d_ucb", {"gamma": 1.5}, "gamma"),
    ],
)
def test_bad_values_are_refused_in_one_line(name: str, overrides: dict, key: str) -> None:
    with pytest.raises(ConfigError, match=f"^{key}:") as err:
        agent_params(name, **overrides)
    assert "\n" not in str(err.value)


def test_the_algorithm_and_its_paper_head_each_docstring() -> None:
    for name, head in [("sw_ucb", "SW-UCB: "), ("d_ucb", "D-UCB: ")]:
        first = (AGENTS[name].__doc__ or "").splitlines()[0]
        assert first.startswith(head) and first.endswith("(Garivier & Moulines, 2011).")
        assert AGENTS[name].fixed_arms
