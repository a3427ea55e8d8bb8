"""``run.every`` on the JAX engine: the program makes only the rounds it keeps (and a
detector's whole path), and they are the rows of the whole run, bit for bit.

On a CPU the JAX engine is for parity of numbers, which CI checks (test_agreement.py and the
batch tests of test_cli.py); this module's machinery runs with ``make test-full``."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

pytest.importorskip("jax")
pytestmark = pytest.mark.slow

from nslb_cli.agents import AGENTS  # noqa: E402
from nslb_cli.bandit.trace import kept_rounds  # noqa: E402
from nslb_cli.common.apart import run_apart  # noqa: E402
from nslb_cli.envs.synthetic import SyntheticParams  # noqa: E402

HORIZON = 103  # not a multiple of the everies below
COLUMNS = ("action", "reward", "expected_reward", "optimal_reward", "state", "belief")


def traces(agent: str, everies: tuple[int, ...], **options: Any) -> dict[int, Any]:
    """The trace of seeds 0-4 for each ``run.every``, from one child process."""

    def compute() -> dict[int, Any]:
        from nslb_cli.jax_engine.engine import simulate_seeds

        env = SyntheticParams(horizon=HORIZON, switch_prob=0.05)
        params = AGENTS[agent].Params(**options)
        return {e: simulate_seeds(env, params, np.arange(5), 6, e) for e in everies}

    result: dict[int, Any] = run_apart(compute, "the JAX engine")
    return result


@pytest.mark.parametrize(
    ("agent", "options"),  # slow: four programs each; a filter and a detector show it in CI
    [("mts", {}), pytest.param("umts", {"num_particles": 10}, marks=pytest.mark.slow),
     pytest.param("sw_mucb", {"tau": 9}, marks=pytest.mark.slow), ("cd_ucb", {})],
)  # fmt: skip
def test_kept_rows_are_the_whole_runs_rows(agent: str, options: dict[str, Any]) -> None:
    """every = 7 (a short last span), 103 (the horizon) and 500 (beyond it: the last round
    alone); the cumulative columns summed over every round; CD-UCB's alarms the same."""
    everies = (1, 7, HORIZON, 500)
    found = traces(agent, everies, **options)
    whole = found[1]
    regret = np.cumsum(whole.optimal_reward - whole.expected_reward, axis=1)
    reward = np.cumsum(whole.reward, axis=1)
    for every in everies[1:]:
        thin, rows = found[every], kept_rounds(HORIZON, every) - 1
        np.testing.assert_array_equal(thin.rounds, rows + 1)
        for column in (*COLUMNS, "p_true_state"):
            np.testing.assert_array_equal(getattr(thin, column), getattr(whole, column)[:, rows])
        np.testing.assert_array_equal(thin.cumulative["cum_regret"], regret[:, rows])
        np.testing.assert_array_equal(thin.cumulative["cum_reward"], reward[:, rows])
        assert repr(thin.summary) == repr(whole.summary)


def test_a_thinned_program_makes_only_the_kept_rounds() -> None:
    """mTS, 200 lanes × 2,000 rounds: with every = 10 the program's outputs and temporaries
    are a tenth of the whole run's (making every round and dropping most on the device,
    they were the same: the test fails so)."""

    def sizes() -> dict[int, int]:
        import jax

        from nslb_cli.jax_engine import scan
        from nslb_cli.jax_engine.engine import agent_of, world_of

        world = world_of(SyntheticParams())
        agent = agent_of(AGENTS["mts"].Params(), world)
        found = {}
        with jax.enable_x64(True):
            values = scan.lane_values(world, agent, 200)
            lanes, traced = scan.on_devices(np.zeros(200, np.int64), values)
            for every in (1, 10):
                program = scan.program(world, agent, 200, every, quiet=True)
                memory = program.lower(lanes, traced).compile().memory_analysis()
                found[every] = memory.output_size_in_bytes + memory.temp_size_in_bytes
        return found

    found = run_apart(sizes, "the JAX engine")
    assert found[10] < 0.15 * found[1], found


def test_the_runners_estimate_is_what_the_program_and_the_hosts_copy_hold() -> None:
    """The memory the runner estimates for a JAX batch (``nslb_cli.runner.memory``: no world
    arrays, the kept rounds, a detector's whole path and the agent's declaration, each
    twice) against what XLA's compiled program holds (outputs and temporaries, on every
    device) plus the host's copy of its outputs: from 0.8 to 2 times it, for mTS, CD-UCB
    and umTS (N = 100) over 2,000 rounds with every = 10, and mTS with every round.
    (Counting each once, the estimate was half the peak, and jobs it let run were killed
    for memory; counting the world's arrays of every round as the default engine does is
    over 10 times the program's with every = 10.)"""
    cases = [("mts", {}, 1), ("mts", {}, 10), ("cd_ucb", {}, 10),
             ("umts", {"num_particles": 100}, 10)]  # fmt: skip

    def sizes() -> list[tuple[int, int]]:
        import jax

        from nslb_cli.jax_engine import scan
        from nslb_cli.jax_engine.engine import agent_of, world_of
        from nslb_cli.runner.engines import ENGINES
        from nslb_cli.runner.memory import batch_bytes

        env, lanes, found = SyntheticParams(), 200, []
        world = world_of(env)
        with jax.enable_x64(True):
            for name, options, every in cases:
                params = AGENTS[name].Params(**options)
                agent = agent_of(params, world)
                seeds, traced = scan.on_devices(
                    np.zeros(lanes, np.int64), scan.lane_values(world, agent, lanes)
                )
                program = scan.program(world, agent, lanes, every, quiet=True)
                held = program.lower(seeds, traced).compile().memory_analysis()
                made = 2 * held.output_size_in_bytes + held.temp_size_in_bytes
                made *= len(jax.devices())
                found.append(
                    (sum(batch_bytes(env, params, lanes, ENGINES["jax"], every).values()), made)
                )
        return found

    for (name, _, every), (estimate, made) in zip(cases, run_apart(sizes, "the JAX engine"),
                                                  strict=True):  # fmt: skip
        assert 0.8 * made <= estimate <= 2 * made, (name, every, estimate, made)
