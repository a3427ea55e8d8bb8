"""env=latent_ar (Trella et al., 2025): the AR path against its closed forms, stationary
coefficients, common random numbers, and the agents refused on it."""

from __future__ import annotations

import numpy as np
import pytest

from nslb_cli.common.errors import ConfigError
from nslb_cli.envs.latent_ar import (
    LatentAR,
    LatentARParams,
    coefficients,
    from_partial_autocorrelations,
    largest_root,
)
from nslb_cli.runner.compose import load
from nslb_cli.runner.job import simulate_seeds


def test_ar1_path_has_the_stationary_variance_and_autocovariance() -> None:
    """Started from its stationary law, an AR(1) keeps ``Var z = s^2 / (1 - g^2)`` and
    ``Cov(z_t, z_{t-1}) = g Var z`` in every round (across 4000 seeds, within 4 SE)."""
    g, s = 0.7, 1.5
    var = s**2 / (1 - g**2)
    p = LatentARParams(coefficients=[g], sigma_z=s, initial_sd=float(np.sqrt(var)), horizon=40)
    z = LatentAR.build(p, np.arange(4000)).mean_rewards[:, :, 1]  # beta = 1: the path itself
    n = len(z)
    for t in (0, 1, 20, 39):
        assert abs(z[:, t].var() - var) < 4 * var * np.sqrt(2 / (n - 1))
    lag = (z[:, 20] * z[:, 19]).mean()
    assert abs(lag - g * var) < 4 * var * np.sqrt((1 + g**2) / n)


def test_ar_path_forgets_its_initial_values_at_the_closed_form_rate() -> None:
    """From ``z_0 ~ N(0, 10^2)``: ``Var z_t = 100 g^(2t) + s^2 (1 - g^(2t)) / (1 - g^2)``."""
    g = 0.9
    p = LatentARParams(coefficients=[g], horizon=12)
    z = LatentAR.build(p, np.arange(4000)).mean_rewards[:, :, 1]
    for t in (1, 5, 11):
        var = 100 * g ** (2 * t) + (1 - g ** (2 * t)) / (1 - g**2)
        assert abs(z[:, t].var() - var) < 4 * var * np.sqrt(2 / 3999)


def test_rewards_are_mu_plus_beta_z_and_regret_is_against_the_best_arm_given_z() -> None:
    p = LatentARParams(order=2, coefficients=[0.5, 0.2], mu=[0.3, 0.0, -1.0], beta=[-1.0, 1.0, 2.0])
    world = LatentAR.build(p, np.arange(3))
    z = (world.mean_rewards[:, :, 1] - 0.0) / 1.0
    np.testing.assert_allclose(world.mean_rewards[:, :, 0], 0.3 - z)
    np.testing.assert_allclose(world.mean_rewards[:, :, 2], -1.0 + 2.0 * z)
    np.testing.assert_array_equal(world.optimal_reward(), world.mean_rewards.max(axis=2))
    assert (world.states == 0).all() and world.problem.n_states == 1
    # z_t = 0.5 z_{t-1} + 0.2 z_{t-2} + eta_t: the innovations are standard normal
    eta = z[:, 2:] - 0.5 * z[:, 1:-1] - 0.2 * z[:, :-2]
    assert 0.8 < eta.std() < 1.2 and np.abs(z[:, :2]).max() > 1.0  # initial sd 10


@pytest.mark.parametrize("order", [1, 2, 5, 10])
def test_drawn_coefficients_are_stationary_and_vary_by_seed(order: int) -> None:
    p = LatentARParams(order=order)
    drawn = np.stack([coefficients(p, seed) for seed in range(300)])
    assert max(largest_root(g) for g in drawn) < 1.0
    assert len(np.unique(drawn[:, 0])) == 300


def test_partial_autocorrelations_map_to_coefficients_by_durbin_levinson() -> None:
    p1, p2 = 0.6, -0.3  # AR(2): phi_22 = gamma_2, phi_11 = gamma_1 / (1 - gamma_2)
    np.testing.assert_allclose(
        from_partial_autocorrelations(np.array([p1, p2])), [p1 * (1 - p2), p2]
    )


def test_non_stationary_or_misshapen_coefficients_are_refused_in_one_line() -> None:
    with pytest.raises(ConfigError, match="stationary.*modulus 1.1") as err:
        LatentARParams(coefficients=[1.1])
    assert "\n" not in str(err.value)
    with pytest.raises(ConfigError, match="one per lag"):
        LatentARParams(order=2, coefficients=[0.5])
    with pytest.raises(ConfigError, match="one per arm"):
        LatentARParams(beta=[1.0, 2.0, 3.0])


def test_an_order_beyond_the_horizon_or_a_path_stationary_only_on_paper_is_refused() -> None:
    with pytest.raises(ConfigError, match="order: must be below env.horizon"):
        LatentARParams(order=500, horizon=500)
    for order in (45, 60):  # drawn roots of modulus 1 in floating point
        with pytest.raises(ConfigError, match="order: seed .* not stationary in floating point"):
            LatentAR.build(LatentARParams(order=order, horizon=500), np.arange(20))
    LatentAR.build(LatentARParams(order=25, horizon=500), np.arange(20))  # large, not insane
    near = (-np.poly([0.8] * 15)[1:]).tolist()  # 15 roots at 0.8: |z| reaches 1e12 by t = 200
    with pytest.raises(ConfigError, match="coefficients: seed 0's latent path reaches"):
        LatentAR.build(LatentARParams(order=15, coefficients=near, horizon=200), np.arange(2))


def test_a_seed_has_the_same_world_alone_in_any_batch_and_for_any_agent() -> None:
    p = LatentARParams(order=3, horizon=60)
    batch, alone = LatentAR.build(p, np.array([2, 7, 11])), LatentAR.build(p, np.array([7]))
    for name in ("mean_rewards", "noise", "states"):
        np.testing.assert_array_equal(getattr(batch, name)[1], getattr(alone, name)[0])
    np.testing.assert_array_equal(
        batch.offline_model.ar_coefficients[1], alone.offline_model.ar_coefficients[0]
    )
    traces = [
        simulate_seeds(load(["env=latent_ar", f"agent={a}", "run.progress=false"]), np.arange(4))
        for a in ("larl", "rexp3")
    ]
    np.testing.assert_array_equal(traces[0].optimal_reward, traces[1].optimal_reward)
    assert (traces[0].action != traces[1].action).any()
    world = LatentAR.build(LatentARParams(), np.arange(4))
    for trace in traces:  # the noise of a round does not depend on the arm pulled
        np.testing.assert_allclose(trace.reward - trace.expected_reward, world.noise, atol=1e-12)


@pytest.mark.parametrize("agent", ["mts", "umts", "sw_mucb", "sw_umucb", "exp4s"])
def test_agents_of_a_discrete_latent_model_are_refused_in_one_line(agent: str) -> None:
    with pytest.raises(ConfigError, match=f"{agent} needs a discrete latent model") as err:
        load(["env=latent_ar", f"agent={agent}"])
    assert "\n" not in str(err.value)


def test_the_kalman_oracle_is_refused_without_an_ar_latent() -> None:
    with pytest.raises(ConfigError, match="needs an autoregressive latent model"):
        load(["env=synthetic", "agent=kalman_oracle"])


def test_the_presets_hold_the_papers_stationary_coefficients() -> None:
    for k in (1, 5, 10):
        env = load([f"env=latent_ar/paper_k{k}", "agent=larl"]).env
        assert env.order == k and len(env.coefficients) == k and env.horizon == 200
        assert largest_root(np.array(env.coefficients)) < 0.91
