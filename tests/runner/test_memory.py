"""The memory estimate refuses batches that cannot fit, naming the key to lower."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from nslb_cli.envs.synthetic import SyntheticParams
from nslb_cli.runner.memory import batch_bytes, too_large
from tests.helpers.agents import agent_params
from tests.helpers.cli import nslb


def test_windows_of_the_last_tau_observations_are_counted() -> None:
    env = SyntheticParams()
    small = batch_bytes(env, agent_params("cd_ucb", tau=100), 100)
    large = batch_bytes(env, agent_params("cd_ucb", tau=100_000), 100)
    assert large["window"] == 1000 * small["window"] > 0
    assert batch_bytes(env, agent_params("mts"), 100)["window"] == 0


def test_a_window_left_to_its_default_counts_as_the_horizon() -> None:
    env = SyntheticParams()
    # sw_ucb's default window (tau: null) comes from the horizon and the model.
    default = batch_bytes(env, SimpleNamespace(tau=None), 100)["window"]
    assert default == batch_bytes(env, agent_params("cd_ucb", tau=env.horizon), 100)["window"]
    reason = too_large(env, agent_params("cd_ucb", tau=2**62), 10)
    assert reason is not None and "agent.tau" in reason


def test_a_window_too_large_for_memory_is_one_line(tmp_path: Path) -> None:
    done = nslb("run", "agent=cd_ucb", f"agent.tau={2**63 - 2}", cwd=tmp_path)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and "lower agent.tau" in lines[0]


def test_the_key_to_lower_is_one_that_grows_the_agents_statistics() -> None:
    """mTS has no particles: on MovieLens its per-state regressions grow with env.rank."""
    from nslb_cli.envs.movielens import MovieLensParams

    mts_on_movielens = too_large(MovieLensParams(rank=100_000), agent_params("mts"), 3)
    assert mts_on_movielens is not None and "lower env.rank or run.batch_size" in mts_on_movielens
    umts = too_large(SyntheticParams(), agent_params("umts", num_particles=10**13), 10)
    assert umts is not None and "lower agent.num_particles or run.batch_size" in umts


def test_more_seeds_than_memory_can_list_is_refused_naming_run_n_seeds(tmp_path: Path) -> None:
    """Not an out-of-memory error blaming run.batch_size after the folder was made."""
    done = nslb("run", "run.n_seeds=100000000000", "run.batch_size=1", cwd=tmp_path)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and lines[0].endswith("lower run.n_seeds")
    assert not (tmp_path / "outputs").exists()
