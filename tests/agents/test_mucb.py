"""SW-mUCB (Algorithm 4) and SW-umUCB: consistent sets, fallback, the slack epsilon, and the
compiled choice and window held to their numpy statement."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from nslb_cli.agents import AGENTS
from nslb_cli.agents.mucb import SlidingWindowModelUCB, window_sums
from nslb_cli.bandit.numerics import pairwise_plan
from nslb_cli.bandit.problem import OfflineModel, Problem
from nslb_cli.bandit.rng import BatchRNG
from nslb_cli.common.errors import ConfigError
from nslb_cli.envs.synthetic import SyntheticParams
from nslb_cli.runner.simulate import build_agent
from tests.helpers.agents import agent_params, run_agent
from tests.helpers.reference_kernels import consistent_states
from tests.helpers.worlds import hand_made_world, synthetic_world


def test_true_state_is_consistent_away_from_change_points() -> None:
    # Exact model, a change every 200 rounds, tau = 100. Rounds whose whole window lies in
    # one segment ((t mod 200) >= tau) are the set T of the paper's appendix, where the
    # true state leaves C_t only if the concentration event E fails; its Proposition 3 bounds
    # P(E fails in a run) by 2 S / n = 0.005. Over 60 runs, P(3 or more runs fail) < 0.004
    # (binomial tail), so at most 2 runs may ever drop the true state there.
    env = SyntheticParams(dynamics="fixed", period=200, horizon=2000)
    trace = run_agent("sw_mucb", np.arange(60), env)
    away = (np.arange(env.horizon) % env.period) >= 100
    consistent = trace.p_true_state[:, away] > 0  # the belief is uniform over C_t
    assert (~consistent).any(axis=1).sum() <= 2


def test_known_model_makes_sw_umucb_sw_mucb() -> None:
    # epsilon = null is the largest prior sd of the means: 0 for a known model.
    env = SyntheticParams(horizon=400, switch_prob=0.02)
    plain = run_agent("sw_mucb", [0, 1, 2], env)
    slack = run_agent("sw_umucb", [0, 1, 2], env)
    np.testing.assert_array_equal(plain.action, slack.action)
    np.testing.assert_array_equal(plain.belief, slack.belief)


@pytest.mark.parametrize(("epsilon", "expected"), [(None, 0.2), (0.05, 0.05)])
def test_epsilon_defaults_to_the_prior_sd(epsilon: float | None, expected: float) -> None:
    world = synthetic_world([0, 1], model="prior", prior_sd=0.2, horizon=10)
    params = agent_params("sw_umucb", epsilon=epsilon)
    agent = build_agent(AGENTS["sw_umucb"], params, world, BatchRNG([0, 1]))
    np.testing.assert_allclose(agent.epsilon, expected)


def test_no_consistent_state_falls_back_to_all_and_is_counted() -> None:
    # The model over-predicts every arm by >= 0.8 in every state: a state's gap grows by
    # about 0.8 per round it is believed, past the radius 0.5 sqrt(6 N log 300) = 2.9 sqrt(N)
    # once N >~ 14, so after ~30 rounds no state is ever consistent.
    runs, horizon = 3, 300
    model = np.array([[1.0, 0.9], [0.8, 1.0]])
    states = np.zeros((runs, horizon), dtype=np.int64)
    world = hand_made_world(np.zeros((2, 2)), states, model, sigma=0.5, seed=4)
    agent = build_agent(AGENTS["sw_mucb"], agent_params("sw_mucb"), world, BatchRNG(range(runs)))
    for t in range(horizon):
        actions = agent.act(t, None)
        np.testing.assert_allclose(agent.belief().posterior.sum(axis=1), 1.0)
        agent.update(t, None, actions, world.reward(t, actions))
    assert not consistent_states(agent).any()
    np.testing.assert_allclose(agent.belief().posterior, 0.5)  # uniform over all states
    assert np.all(agent.summary()["fallbacks"] > horizon - 60)


def test_an_over_predicting_state_is_eliminated() -> None:
    # Nearly noise-free; the truth is state 1. Round 1 is optimistic over all states and
    # believes state 0 (arm 0, predicted 1.0), which pays 0.0: G(0) = 1 > sigma sqrt(6 log n),
    # so state 0 leaves C and round 2 plays state 1's best arm.
    means = np.array([[1.0, 0.0], [0.0, 0.6]])
    world = hand_made_world(means, np.ones((1, 20), dtype=np.int64), means, sigma=1e-9)
    agent = build_agent(AGENTS["sw_mucb"], agent_params("sw_mucb"), world, BatchRNG([0]))
    first = agent.act(0, None)
    assert first.tolist() == [0] and agent.belief().state.tolist() == [0]
    agent.update(0, None, first, world.reward(0, first))
    assert consistent_states(agent).tolist() == [[False, True]]
    assert agent.act(1, None).tolist() == [1]


@pytest.mark.parametrize(
    ("name", "overrides", "key"),
    [
        ("sw_mucb", {"tau": 0}, "tau"),
        ("sw_umucb", {"tau": -3}, "tau"),
        ("sw_umucb", {"epsilon": -0.1}, "epsilon"),
    ],
)
def test_invalid_parameters_name_the_field(name: str, overrides: dict, key: str) -> None:
    with pytest.raises(ConfigError, match=f"^{key}:"):
        agent_params(name, **overrides)


def test_bernoulli_radius_uses_the_sub_gaussian_constant_one_half() -> None:
    world = synthetic_world([0], reward="bernoulli", sigma=2.0)
    agent = build_agent(AGENTS["sw_mucb"], agent_params("sw_mucb"), world, BatchRNG([0]))
    assert agent.radius == pytest.approx(0.5 * np.sqrt(6 * np.log(2000)))


def numpy_sums(believed: np.ndarray, residuals: np.ndarray, n_states: int) -> np.ndarray:
    """``G(s)`` as SW-mUCB's numpy statement sums it, ``(R, S)``."""
    member = believed[:, None, :] == np.arange(n_states)[None, :, None]
    return (member * residuals[:, None, :]).sum(axis=2)


@pytest.mark.parametrize("tau", [1, 7, 8, 13, 100, 128, 129, 300, 1000, 1037])
def test_window_sums_are_numpys_to_the_last_bit(tau: int) -> None:
    # Residuals spread over many orders of magnitude: any other order of the additions gives
    # other last bits (checked below against a plain running sum). Blocks of 8 and 128 and
    # numpy's split of longer windows in two are all exercised by the window lengths.
    runs, S = 40, 4
    rng = np.random.default_rng(tau)
    believed = rng.integers(-1, S, (runs, tau))
    residuals = rng.normal(0, 1, (runs, tau)) * np.exp(rng.normal(0, 4, (runs, tau)))
    plan = pairwise_plan(tau)
    acc, stack = np.empty((S, 8)), np.empty((len(plan), S))
    sums = np.empty((runs, S))
    for r in range(runs):
        window_sums(believed, residuals, r, plan, acc, stack)
        sums[r] = stack[0]
    expected = numpy_sums(believed, residuals, S)
    np.testing.assert_array_equal(sums, expected)
    running = np.zeros((runs, S))
    for i in range(tau):
        running += (believed[:, i, None] == np.arange(S)) * residuals[:, i, None]
    assert tau < 8 or (running != expected).any()  # the order of the additions matters


def linear_model(runs: int, n_states: int, dim: int, rng: np.random.Generator) -> OfflineModel:
    """A linear offline model with parameters ``theta_s`` drawn at random for every run."""
    return OfflineModel(
        means=rng.normal(0, 1, (runs, n_states, dim)),
        mean_sd=np.zeros((runs, n_states, 1)),
        transitions=np.full((runs, n_states, n_states), 1.0 / n_states),
        concentration=None,
        initial=np.full((runs, n_states), 1.0 / n_states),
        covariance=np.broadcast_to(np.eye(dim), (runs, n_states, dim, dim)).copy(),
    )


@pytest.mark.parametrize("tau", [30, 150])
@pytest.mark.parametrize("linear", [False, True], ids=["multi-armed", "contexts"])
def test_the_compiled_choice_is_the_numpy_statement(tau: int, linear: bool) -> None:
    """act (compiled) = consistent_states() (numpy), all states where it is empty, then the
    first largest mean over the consistent states; on random windows where some runs have
    no consistent state, some a few, with tied means."""
    runs, S, K, d = 300, 5, 5, 3  # the synthetic model's S and K
    rng = np.random.default_rng(tau + linear)
    problem = Problem(n_arms=K, n_states=S, horizon=1000, sigma=0.5, n_runs=runs)
    if linear:
        model = linear_model(runs, S, d, rng)
        contexts = np.round(rng.normal(0, 1, (runs, K, d)), 1)
        contexts[:, 1] = contexts[:, 0]  # arms 0 and 1 tie in every state
    else:
        model = synthetic_world(list(range(runs)), model="prior").offline_model
        model = replace(model, means=np.round(model.means, 1))  # ties between arms, states
        contexts = None
    agent = SlidingWindowModelUCB(agent_params("sw_mucb", tau=tau), problem, model, BatchRNG([0]))
    agent.believed[:] = rng.integers(-1, S, (runs, tau))
    drift = rng.uniform(0, 1.5, (runs, S))  # each state's mean residual: around the radius
    drift[:40] = 10.0  # no state is consistent
    agent.residuals[:] = rng.normal(drift[np.arange(runs)[:, None], agent.believed], 1.0)
    agent.counts[:] = (agent.believed[:, :, None] == np.arange(S)).sum(axis=1)
    consistent = consistent_states(agent)
    empty = ~consistent.any(axis=1)
    assert empty.sum() >= 30 and (consistent.sum(axis=1) == S).sum() < runs - 100
    consistent[empty] = True
    means = model.expected_rewards(contexts)
    best = np.where(consistent[:, :, None], means, -np.inf).reshape(runs, S * K).argmax(axis=1)
    arms = agent.act(0, contexts)
    np.testing.assert_array_equal(agent.belief().state, best // K)
    np.testing.assert_array_equal(arms, best % K)
    np.testing.assert_array_equal(
        agent.belief().posterior, consistent / consistent.sum(axis=1)[:, None]
    )
    np.testing.assert_array_equal(agent.fallbacks, empty)
    top = np.sort(np.where(consistent[:, :, None], means, -np.inf).reshape(runs, -1), axis=1)
    assert (top[:, -1] == top[:, -2]).sum() > 30  # ties for the best were broken


def test_the_compiled_window_follows_the_rounds() -> None:
    """Over 250 rounds of tau = 100 (the ring buffer wraps), every round's compiled consistent
    set is the numpy statement's on the window the compiled update keeps, and ``counts`` is
    ``N_t(s)``; the last residuals are ``mu(A_t, B_t) - epsilon - R_t``."""
    runs = 30
    world = synthetic_world(list(range(runs)), model="prior", horizon=250)
    params = agent_params("sw_umucb", epsilon=0.1)
    agent = build_agent(AGENTS["sw_umucb"], params, world, BatchRNG(range(runs)))
    partial = 0
    for t in range(250):
        consistent = consistent_states(agent)
        consistent[~consistent.any(axis=1)] = True
        actions = agent.act(t, None)
        np.testing.assert_array_equal(agent.belief().posterior > 0, consistent)
        partial += (~consistent).any(axis=1).sum()
        rewards = world.reward(t, actions)
        agent.update(t, None, actions, rewards)
    counts = (agent.believed[:, :, None] == np.arange(world.problem.n_states)).sum(axis=1)
    np.testing.assert_array_equal(agent.counts, counts)
    predicted = world.offline_model.means[np.arange(runs), agent.state, actions]
    np.testing.assert_array_equal(agent.residuals[:, 249 % 100], predicted - 0.1 - rewards)
    assert partial > 100  # states were eliminated along the way
