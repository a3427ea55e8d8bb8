"""Every registered agent against one contract: valid actions, beliefs, batch invariance."""

from __future__ import annotations

import numpy as np
import pytest

from nslb_cli.agents import AGENTS
from nslb_cli.envs.synthetic import Synthetic, SyntheticParams
from nslb_cli.results import seed_frame
from tests.conftest import run_agent

ENVS = {
    "fixed-known": SyntheticParams(dynamics="fixed", horizon=120, period=40),
    "markov-prior": SyntheticParams(model="prior", horizon=120, switch_prob=0.02),
}


@pytest.mark.parametrize("env", ENVS.values(), ids=ENVS.keys())
@pytest.mark.parametrize("name", sorted(AGENTS))
def test_agent_contract(name: str, env: SyntheticParams) -> None:
    trace = run_agent(name, [3, 4, 5], env)
    assert trace.action.shape == (3, env.horizon)
    assert trace.action.min() >= 0 and trace.action.max() < env.n_arms
    means = Synthetic.build(env, np.array([3, 4, 5])).mean_rewards  # the world, rebuilt
    pulled = np.take_along_axis(means, trace.action[:, :, None], axis=2)[:, :, 0]
    np.testing.assert_array_equal(trace.expected_reward, pulled)
    np.testing.assert_array_equal(trace.optimal_reward, means.max(axis=2))
    has_belief = trace.belief[:, 0] >= 0
    assert np.all(has_belief == has_belief[0]), "a belief is reported in all runs or none"
    if has_belief[0]:
        assert trace.belief.min() >= 0 and trace.belief.max() < env.n_states
        assert np.all((trace.p_true_state >= 0) & (trace.p_true_state <= 1 + 1e-12))
    else:
        assert np.isnan(trace.p_true_state).all()
    for values in trace.summary.values():
        assert values.shape == (3,)


@pytest.mark.parametrize("name", sorted(AGENTS))
def test_batch_invariance(name: str) -> None:
    """Seed 7's CSV is byte-identical alone and inside a batch (SPEC §2)."""
    env = ENVS["markov-prior"]
    alone = run_agent(name, [7], env)
    batch = run_agent(name, [2, 7, 11, 30], env)
    csv_alone = seed_frame(alone, 0).to_csv(index=False)
    csv_batch = seed_frame(batch, 1).to_csv(index=False)
    assert csv_alone == csv_batch
    for key, values in alone.summary.items():
        assert values[0] == batch.summary[key][1]


@pytest.mark.parametrize("name", sorted(AGENTS))
def test_common_random_numbers(name: str) -> None:
    """The world of a seed does not depend on the agent: same states, same noise."""
    env = ENVS["fixed-known"]
    reference = run_agent("random", [1, 2], env)
    trace = run_agent(name, [1, 2], env)
    np.testing.assert_array_equal(trace.state, reference.state)
    np.testing.assert_array_equal(trace.optimal_reward, reference.optimal_reward)
    noise, reference_noise = (x.reward - x.expected_reward for x in (trace, reference))
    np.testing.assert_allclose(noise, reference_noise, rtol=0, atol=1e-12)
