"""The pool of reward statistics shared between umTS's particles: its bookkeeping."""

from __future__ import annotations

import numpy as np
import pytest

from nslb_cli.agents import AGENTS
from nslb_cli.agents.umts.pool import SlotPool
from nslb_cli.bandit.rng import BatchRNG
from nslb_cli.envs.synthetic import Synthetic, SyntheticParams
from nslb_cli.runner.simulate import build_agent
from tests.helpers.posteriors import statistics
from tests.helpers.worlds import linear_world


def assert_consistent(pool: SlotPool) -> None:
    """References are counted, free slots are exactly the unreferenced ones, and a slot
    holds statistics of one state only."""
    runs, particles, states = pool.slot.shape
    P = particles * states
    for r in range(runs):
        counted = np.bincount(pool.slot[r].ravel(), minlength=P)
        np.testing.assert_array_equal(pool.refs[r], counted)
        free = pool.free[r, : pool.n_free[r]]
        assert len(np.unique(free)) == len(free)
        np.testing.assert_array_equal(np.sort(free), np.flatnonzero(counted == 0))
        for s in range(states):
            others = np.delete(pool.slot[r], s, axis=1)
            assert not np.isin(pool.slot[r, :, s], others).any()


def agent_in(world, **params):
    params = AGENTS["umts"].Params(**params)
    return build_agent(AGENTS["umts"], params, world, BatchRNG(world.seeds))


@pytest.mark.parametrize("world", ["synthetic", "linear"])
def test_pool_stays_consistent_and_shares(world: str) -> None:
    """Over a run with splits (uncertain model) and resampling, the bookkeeping holds, and
    the particles share far fewer statistics than they have particle-state pairs."""
    if world == "linear":
        world = linear_world(horizon=120, prior_scale=0.3)
    else:
        world = Synthetic.build(SyntheticParams(model="prior", horizon=120), np.array([3, 4]))
    agent = agent_in(world, num_particles=40)
    for t in range(world.problem.horizon):
        contexts = world.context(t)
        actions = agent.act(t, contexts)
        agent.update(t, contexts, actions, world.reward(t, actions))
        assert_consistent(agent.rewards.pool)
    assert agent.resamples.min() > 0
    live = (agent.rewards.pool.refs > 0).sum(axis=1)
    assert np.all(live > world.problem.n_states), "updates split shared slots"
    assert np.all(live < 40 * world.problem.n_states // 2), "copies keep sharing"


def test_known_model_keeps_one_slot_per_state() -> None:
    """With a known model a reward changes no statistics: every particle keeps pointing at
    the S priors, which stay equal to the model."""
    world = Synthetic.build(SyntheticParams(horizon=100), np.array([0, 1]))
    agent = agent_in(world, num_particles=30)
    for t in range(world.problem.horizon):
        actions = agent.act(t, None)
        agent.update(t, None, actions, world.reward(t, actions))
    pool = agent.rewards.pool
    np.testing.assert_array_equal((pool.refs > 0).sum(axis=1), world.problem.n_states)
    expected = np.broadcast_to(
        world.offline_model.means[:, None], statistics(agent.rewards)[0].shape
    )
    np.testing.assert_array_equal(statistics(agent.rewards)[0], expected)
