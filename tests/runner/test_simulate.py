"""The round loop and its metrics: oracle, regret invariants, mTS against random."""

from __future__ import annotations

import numpy as np

from nslb_cli.envs.synthetic import Synthetic, SyntheticParams
from tests.helpers.agents import run_agent
from tests.helpers.results_tree import seed_frame

FIXED_KNOWN = SyntheticParams(dynamics="fixed", model="known")


def test_oracle_regret_is_exactly_zero() -> None:
    for env in (FIXED_KNOWN, SyntheticParams(model="prior", horizon=500)):
        trace = run_agent("oracle", [0, 1, 2], env)
        assert np.all(trace.regret == 0.0)
        assert np.all(trace.p_true_state == 1.0)
        np.testing.assert_array_equal(trace.belief, trace.state)
        for other in ("mts", "random"):  # same seeds, same world: never a better arm
            assert np.all(run_agent(other, [0, 1, 2], env).expected_reward <= trace.expected_reward)


def test_regret_is_the_gap_to_the_best_arm_and_cumulates() -> None:
    env = SyntheticParams(horizon=300)
    trace = run_agent("random", [4, 5], env)
    frame = seed_frame(trace, 1)
    world = Synthetic.build(env, np.array([5]))  # the same world, rebuilt from the seed
    means = world.mean_rewards[0]  # (n, K)
    pulled = means[np.arange(300), frame.action.to_numpy()]
    np.testing.assert_allclose(frame.expected_reward, pulled)
    np.testing.assert_allclose(frame.regret, means.max(axis=1) - pulled)
    assert (frame.regret > 0).mean() > 0.5, "random play misses the best arm most rounds"
    np.testing.assert_allclose(frame.cum_regret, np.cumsum(frame.regret))
    np.testing.assert_allclose(frame.cum_reward, np.cumsum(frame.reward))
    assert frame.t.tolist() == list(range(1, 301))
    assert frame.belief.isna().all() and frame.p_true_state.isna().all()


def test_random_regret_matches_its_closed_form() -> None:
    """Random play's expected regret per round is max_a mu - mean_a mu: 4 SE over 30 seeds."""
    env = SyntheticParams(horizon=400)
    trace = run_agent("random", np.arange(30), env)
    world = Synthetic.build(env, np.arange(30))
    expected = (world.mean_rewards.max(axis=2) - world.mean_rewards.mean(axis=2)).sum(axis=1)
    diff = trace.regret.sum(axis=1) - expected
    assert abs(diff.mean()) < 4 * diff.std(ddof=1) / np.sqrt(len(diff))


def test_mts_regret_is_below_half_of_random_on_fixed_known() -> None:
    seeds = np.arange(50)
    mts = run_agent("mts", seeds, FIXED_KNOWN).regret.sum(axis=1)
    rnd = run_agent("random", seeds, FIXED_KNOWN).regret.sum(axis=1)
    assert mts.mean() < 0.5 * rnd.mean()


def test_mts_tracks_the_latent_state() -> None:
    """With the true model, mTS's posterior mass on the true state is high on average and
    drops right after each fixed change (it must discover the change)."""
    trace = run_agent("mts", np.arange(20), FIXED_KNOWN)
    p = trace.p_true_state
    assert p[:, 100:200].mean() > 0.8
    after_change = p[:, [200, 400, 600, 800]].mean()
    before_change = p[:, [199, 399, 599, 799]].mean()
    assert after_change < before_change - 0.3
