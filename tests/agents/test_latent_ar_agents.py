"""LARL, LARL-ETC, AR-UCB, Rexp3 and the Kalman oracle (Trella et al., 2025) against closed
forms: the ridge solution, exact Gaussian conditioning, Besbes et al.'s tuning; and the
regret ordering the paper reports, within standard errors."""

from __future__ import annotations

import numpy as np
import pytest

from nslb_cli.agents import AGENTS
from nslb_cli.agents.larl import design, ridge_fits, select_lags
from nslb_cli.agents.rexp3 import besbes_tuning
from nslb_cli.bandit.rng import BatchRNG
from nslb_cli.common.errors import ConfigError
from nslb_cli.envs.latent_ar import LatentAR, LatentARParams
from nslb_cli.runner.compose import load
from nslb_cli.runner.job import simulate_seeds
from nslb_cli.runner.simulate import build_agent
from tests.helpers.agents import agent_params


def _agent(name: str, env: LatentARParams, seeds: np.ndarray, **params: object) -> tuple:
    world = LatentAR.build(env, seeds)
    return build_agent(AGENTS[name], agent_params(name, **params), world, BatchRNG(seeds)), world


def test_larl_holds_the_closed_form_ridge_solution_of_each_arm() -> None:
    """After 40 rounds, each arm's ``theta`` and ``V^-1`` are ``(lambda I + X'X)^-1 X'y`` and
    ``(lambda I + X'X)^-1`` over the rounds it was pulled from round ``s`` on."""
    s, ridge = 2, 0.7
    agent, world = _agent("larl", LatentARParams(horizon=40), np.arange(3), s=s, ridge=ridge)
    xs, arms, ys = [], [], []
    for t in range(40):
        a = agent.act(t, None)
        y = world.reward(t, a)
        if t >= s:
            xs.append(agent.x.copy())
            arms.append(a)
            ys.append(y)
        agent.update(t, None, a, y)
    x, arms, y = np.stack(xs, 1), np.stack(arms, 1), np.stack(ys, 1)  # (R, rounds, d)
    d = 2 * s * 2 + 1
    for r in range(3):
        inverse, theta = ridge_fits(x[r], y[r], arms[r], 2, ridge)
        np.testing.assert_allclose(agent.theta[r, :, :d], theta, atol=1e-9)
        np.testing.assert_allclose(agent.inverse[r, :, :d, :d], inverse, atol=1e-9)


def test_larl_features_are_the_papers() -> None:
    """Row ``t``: ``R_{t-s} e_{A_{t-s}}, …, e_{A_{t-s}}, …, 1`` (oldest first)."""
    rewards, actions = np.array([0.5, -1.0, 2.0, 3.0]), np.array([1, 0, 1, 0])
    x = design(rewards, actions, 2, 2)
    np.testing.assert_array_equal(x[0], [0, 0.5, -1.0, 0, 0, 1, 1, 0, 1])
    np.testing.assert_array_equal(x[1], [-1.0, 0, 0, 2.0, 1, 0, 0, 1, 1])


def test_larl_etc_explores_in_turn_then_keeps_the_bic_choice_and_its_fit() -> None:
    env = LatentARParams(order=2, coefficients=[0.6, 0.3], horizon=100)
    agent, world = _agent("larl_etc", env, np.arange(4))
    for t in range(20):  # explore = 100 // 5
        a = agent.act(t, None)
        assert (a == t % 2).all()
        agent.update(t, None, a, world.reward(t, a))
    for r in range(4):
        s, inverse, theta = select_lags(agent.explored[r], agent.explored_arms[r], 15, 2, 1.0)
        assert agent.lags[r] == s and agent.dims[r] == 4 * s + 1
        np.testing.assert_array_equal(agent.theta[r, :, : 4 * s + 1], theta)
    assert agent.summary()["lags"].shape == (4,)


def test_bic_prefers_the_lags_that_carry_the_signal() -> None:
    """Rewards that follow ``R_t = 0.9 R_{t-1} + noise`` regardless of the arm: BIC picks
    ``s = 1`` over longer pasts, whose extra coefficients only fit noise."""
    rng = np.random.default_rng(3)
    y = np.zeros(400)
    for t in range(1, 400):
        y[t] = 0.9 * y[t - 1] + rng.normal()
    assert select_lags(y, np.arange(400) % 2, 15, 2, 1.0)[0] == 1


def test_ar_ucb_takes_the_ar_order_or_refuses_without_one() -> None:
    agent, _ = _agent("ar_ucb", LatentARParams(order=3, horizon=10), np.arange(2))
    assert agent.s == 3 and (agent.dims == 3).all()
    with pytest.raises(ConfigError, match="agent.s"):
        simulate_seeds(load(["agent=ar_ucb", "run.progress=false"]), np.arange(2))


def test_rexp3_tuning_is_besbes_theorem_2() -> None:
    batch, gamma = besbes_tuning(2, 200, 200.0)
    assert batch == 2 and gamma == pytest.approx(np.sqrt(2 * np.log(2) / ((np.e - 1) * 2)))
    batch, _ = besbes_tuning(3, 1000, 10.0)
    assert batch == int(np.ceil((3 * np.log(3)) ** (1 / 3) * 100 ** (2 / 3)))


def test_rexp3_restarts_every_batch_and_weights_by_importance() -> None:
    agent, world = _agent("rexp3", LatentARParams(horizon=12), np.arange(3), batch=3, gamma=0.5)
    for t in range(12):
        a = agent.act(t, None)
        if t % 3 == 0:
            np.testing.assert_array_equal(agent.probabilities, 0.5)
        p, y = agent.probabilities[np.arange(3), a], world.reward(t, a)
        before = agent.log_weights.copy()
        agent.update(t, None, a, y)
        step = agent.log_weights - before
        np.testing.assert_allclose(step[np.arange(3), a], 0.5 * y / (2 * p))


def _predicted_latent(env: LatentARParams, actions: np.ndarray, rewards: np.ndarray) -> np.ndarray:
    """``E[z_t | R_0 … R_{t-1}]`` for every ``t``, by conditioning the joint Gaussian law of the
    path and the rewards directly (no filter): ``z = L xi`` with ``xi`` independent."""
    k, n, g = env.order, len(actions), np.asarray(env.coefficients)
    L = np.zeros((n, n))
    for t in range(n):
        L[t, t] = 1.0
        if t >= k:
            L[t] += sum(g[i] * L[t - 1 - i] for i in range(k))
    sd = np.where(np.arange(n) < k, env.initial_sd, env.sigma_z)
    cov_z = L @ np.diag(sd**2) @ L.T
    beta, mu = np.asarray(env.beta)[actions], np.asarray(env.mu)[actions]
    cov_r = beta[:, None] * cov_z * beta[None, :] + env.sigma_r**2 * np.eye(n)
    predicted = np.zeros(n)
    for t in range(1, n):
        gain = np.linalg.solve(cov_r[:t, :t], cov_z[t, :t] * beta[:t])
        predicted[t] = gain @ (rewards[:t] - mu[:t])
    return predicted


def test_the_kalman_oracle_predicts_the_exact_posterior_mean_of_the_latent() -> None:
    env = LatentARParams(order=2, coefficients=[0.5, 0.3], mu=[0.2, -0.1], beta=[-1.0, 2.0],
                         sigma_z=0.7, sigma_r=0.5, initial_sd=3.0, horizon=12)  # fmt: skip
    agent, world = _agent("kalman_oracle", env, np.arange(3))
    actions, rewards, predicted = np.zeros((3, 12), int), np.zeros((3, 12)), np.zeros((3, 12))
    for t in range(12):
        actions[:, t] = agent.act(t, None)
        predicted[:, t] = agent.mean[:, agent.coordinate]
        rewards[:, t] = world.reward(t, actions[:, t])
        agent.update(t, None, actions[:, t], rewards[:, t])
    for r in range(3):
        exact = _predicted_latent(env, actions[r], rewards[r])
        np.testing.assert_allclose(predicted[r], exact, atol=1e-9)
        best = np.argmax(np.asarray(env.mu) + np.outer(exact, env.beta), axis=1)
        np.testing.assert_array_equal(actions[r], best)


def _final_regret(agent: str, env: str, seeds: int = 100) -> np.ndarray:
    trace = simulate_seeds(load([f"env={env}", f"agent={agent}", "run.progress=false"]),
                           np.arange(seeds))  # fmt: skip
    return (trace.optimal_reward - trace.expected_reward).sum(axis=1)


@pytest.mark.parametrize("env", ["latent_ar/paper_k1", "latent_ar/paper_k5"])
def test_the_kalman_oracle_beats_larl_which_beats_uniform_play(env: str) -> None:
    """The paper's ordering, paired by seed, by more than 3 standard errors."""
    kalman, larl, random = (_final_regret(a, env) for a in ("kalman_oracle", "larl", "random"))
    for better, worse in ((kalman, larl), (larl, random)):
        difference = worse - better
        assert difference.mean() > 3 * difference.std(ddof=1) / np.sqrt(len(difference))
