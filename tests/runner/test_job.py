"""Consecutive jobs with the same environment and seeds share one world (job.build_world)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from nslb_cli.bandit.world import World
from nslb_cli.envs.synthetic import Synthetic, SyntheticParams
from nslb_cli.runner.job import build_world, grouped_order
from tests.helpers.agents import run_agent

ENV = SyntheticParams(horizon=120, period=40, model="prior")


def arrays(value: object) -> dict[str, np.ndarray]:
    """Every array of a world, its offline model included, by field path."""
    found = {}
    for field in dataclasses.fields(value):
        item = getattr(value, field.name)
        if isinstance(item, np.ndarray):
            found[field.name] = item
        elif dataclasses.is_dataclass(item):
            found.update({f"{field.name}.{k}": v for k, v in arrays(item).items()})
    return found


def test_the_same_environment_and_seeds_give_the_same_world_object() -> None:
    first = build_world(ENV, np.arange(3))
    assert build_world(ENV, np.arange(3, dtype=np.int32)) is first
    assert build_world(ENV, np.arange(4)) is not first
    longer = build_world(dataclasses.replace(ENV, horizon=121), np.arange(3))
    assert longer.states.shape == (3, 121), "the params are part of the key"


def test_a_reused_world_is_read_only_and_equals_a_fresh_one() -> None:
    world = build_world(ENV, np.arange(3))
    fresh = Synthetic.build(ENV, np.arange(3))
    shared, rebuilt = arrays(world), arrays(fresh)
    assert shared.keys() == rebuilt.keys() and "offline_model.means" in shared
    for name, values in shared.items():
        assert not values.flags.writeable, name
        np.testing.assert_array_equal(values, rebuilt[name], err_msg=name)
    with pytest.raises(ValueError, match="read-only"):
        world.offline_model.means[...] = 0.0


@pytest.mark.parametrize("agent", ["umts", "mts", "oracle"])
def test_an_agent_after_others_on_the_shared_world_plays_as_on_its_own(agent: str) -> None:
    seeds = [5, 6]
    build_world(dataclasses.replace(ENV, horizon=7), np.asarray(seeds))  # evict ENV's world
    alone = run_agent(agent, seeds, ENV)
    for before in ("cd_ts", "exp4s", "umts"):
        run_agent(before, seeds, ENV)
    after = run_agent(agent, seeds, ENV)
    assert isinstance(build_world(ENV, np.asarray(seeds)), World)
    for field in ("action", "reward", "belief", "p_true_state"):
        np.testing.assert_array_equal(getattr(after, field), getattr(alone, field), err_msg=field)


class QuietParams(SyntheticParams):
    """Environment params whose repr hides their values (a plugin's may)."""

    def __repr__(self) -> str:
        return "QuietParams()"


def test_the_key_holds_every_field_whatever_the_params_repr_shows() -> None:
    short = build_world(QuietParams(horizon=50), np.arange(2))
    assert build_world(QuietParams(horizon=60), np.arange(2)).states.shape == (2, 60)
    assert short.states.shape == (2, 50)


def test_a_groups_jobs_run_in_a_row_from_its_first_jobs_turn() -> None:
    """Jobs labelled by their group (a job alone: a label of its own) run each group's jobs
    one after another, the groups and lone jobs in the order of their first jobs."""
    assert grouped_order(["a", 1, "b", "a", 4, "b"]) == [0, 3, 1, 2, 5, 4]
    assert grouped_order([0, 1, 2]) == [0, 1, 2]  # no group: Hydra's order
