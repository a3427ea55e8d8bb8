"""The memory estimate adds up what agents and environments declare, and refuses batches that
cannot fit naming the key to lower; a malformed declaration is refused naming the plugin."""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from nslb_cli.agents import AGENTS, GROUP
from nslb_cli.agents.reference import UniformRandom
from nslb_cli.bandit.problem import Sizes
from nslb_cli.common.errors import ConfigError
from nslb_cli.envs.movielens import MovieLensParams
from nslb_cli.envs.synthetic import Synthetic, SyntheticParams
from nslb_cli.runner import memory
from nslb_cli.runner.compose import check_command_line
from nslb_cli.runner.engines import ENGINES
from nslb_cli.runner.memory import (
    Malformed,
    agent_memory,
    batch_bytes,
    env_memory,
    sizes_of,
    too_large,
)
from tests.helpers.agents import agent_params
from tests.helpers.cli import nslb
from tests.helpers.paths import REPO
from tests.helpers.plugins import fake_distribution, nslb_with

NUMPY, JAX = ENGINES["numpy"], ENGINES["jax"]


def test_windows_of_the_last_tau_observations_are_counted() -> None:
    env = SyntheticParams()
    small = batch_bytes(env, agent_params("cd_ucb", tau=100), 100, NUMPY)
    large = batch_bytes(env, agent_params("cd_ucb", tau=100_000), 100, NUMPY)
    assert large["agent.tau"] == 1000 * small["agent.tau"] > 0
    assert "agent.tau" not in batch_bytes(env, agent_params("mts"), 100, NUMPY)


def test_a_window_left_to_its_default_counts_as_the_horizon() -> None:
    env = SyntheticParams()
    # sw_ucb's default window (tau: null) comes from the horizon and the model.
    default = batch_bytes(env, agent_params("sw_ucb"), 100, NUMPY)["agent.tau"]
    assert (
        default
        == batch_bytes(env, agent_params("sw_ucb", tau=env.horizon), 100, NUMPY)["agent.tau"]
    )
    reason = too_large(env, agent_params("cd_ucb", tau=2**62), 10, NUMPY)
    assert reason is not None and reason.endswith("lower agent.tau or run.batch_size")


def test_a_window_too_large_for_memory_is_one_line(tmp_path: Path) -> None:
    done = nslb("run", "agent=cd_ucb", f"agent.tau={2**63 - 2}", cwd=tmp_path)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and "lower agent.tau" in lines[0]


def test_the_key_to_lower_is_one_that_grows_the_agents_statistics() -> None:
    """mTS has no particles: on MovieLens its per-state regressions grow with env.rank."""
    mts_on_movielens = too_large(MovieLensParams(rank=100_000), agent_params("mts"), 3, NUMPY)
    assert mts_on_movielens is not None and "lower env.rank or run.batch_size" in mts_on_movielens
    umts = too_large(SyntheticParams(), agent_params("umts", num_particles=10**13), 10, NUMPY)
    assert umts is not None and "lower agent.num_particles or run.batch_size" in umts


def test_the_estimate_is_the_sum_of_the_declarations_and_the_worlds_arrays() -> None:
    """umTS declares N particles of the default statistics; the world and the trace come on
    top (the numbers the refusal thresholds were set with). A term that grows with several
    keys names them all."""
    env = SyntheticParams()  # n = 2000 rounds, K = 5 arms, S = 5 states
    R, n, K, S, N = 7, env.horizon, env.n_arms, env.n_states, 11
    assert batch_bytes(env, agent_params("umts", num_particles=N), R, NUMPY) == {
        "env.horizon, env.n_arms": 8 * R * n * (K + 3),
        "env.horizon": 8 * R * n * 10,
        "agent.num_particles": 8 * R * N * S * (2 * K + S),
    }
    assert batch_bytes(env, agent_params("mts"), R, NUMPY)["env.n_states, env.n_arms"] == (
        8 * R * S * (2 * K + S)
    )
    contexts = MovieLensParams(rank=4)  # the world keeps the items behind the arms too
    K, S = contexts.n_arms, contexts.n_states
    assert batch_bytes(contexts, agent_params("umts", num_particles=N), R, NUMPY) == {
        "env.horizon, env.n_arms": 8 * R * contexts.horizon * (2 * K + 3),
        "env.horizon": 8 * R * contexts.horizon * 10,
        "agent.num_particles, env.rank": 8 * R * N * S * (4 * 4 + 4),
    }
    arms = too_large(MovieLensParams(n_arms=10**8), agent_params("mts"), 10, NUMPY)
    assert arms is not None and arms.endswith("lower env.horizon, env.n_arms or run.batch_size")


def test_the_jax_engine_is_estimated_by_what_it_makes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """mTS over 100,000 seeds in one batch on an 8 GiB machine: the default engine's world
    and trace of every round (27 GiB) cannot fit. The JAX engine draws the world round by
    round and, with run.every=10, makes the kept rounds only (3 GiB with the host's copy):
    it runs. Keeping every round (30 GiB) it does not, and is told to lower the horizon or
    the batch."""
    pytest.importorskip("jax")
    monkeypatch.setattr(memory, "physical_memory", lambda: 8 * 2**30)
    job = ["agent=mts", "run.n_seeds=100000", "run.batch_size=100000", "run.format=parquet"]
    job.append(f"hydra.run.dir={tmp_path / 'out'}")
    assert check_command_line([*job, "run.engine=jax", "run.every=10"], False).jobs == 1
    for refused in (["run.every=10"], ["run.engine=jax", "run.every=1"]):
        with pytest.raises(ConfigError, match="lower env.horizon or run.batch_size"):
            check_command_line([*job, *refused], False)


def test_the_jax_engine_keeps_a_detectors_whole_path() -> None:
    """CD-UCB's alarms are scored on every round's latent state: its whole path and alarms
    (9 bytes a round) stay on the JAX engine beside the kept rows, each counted twice as
    the rows are; mTS has none. The kept
    rounds are counted, not listed: a horizon of 10^15 is refused at once."""
    env, R, kept = SyntheticParams(), 7, 200  # rounds 10, 20, ..., 2000
    mts = batch_bytes(env, agent_params("mts"), R, JAX, 10)
    cd_ucb = batch_bytes(env, agent_params("cd_ucb"), R, JAX, 10)
    assert mts["env.horizon"] == 2 * 8 * R * kept * 10  # twice: made, and copied to the host
    assert cd_ucb["env.horizon"] == mts["env.horizon"] + 2 * 9 * R * env.horizon
    huge = too_large(replace(env, horizon=10**15), agent_params("mts"), R, JAX, 10)
    assert huge is not None and huge.endswith("lower env.horizon or run.batch_size")


def test_bocds_hypotheses_are_counted_up_to_the_horizon() -> None:
    env = SyntheticParams(n_arms=100, horizon=10**5)
    short = replace(env, horizon=10**4)
    capped = batch_bytes(short, agent_params("bocd_ts", max_hypotheses=10**5), 10, NUMPY)
    assert capped["agent.max_hypotheses"] == 8 * 10 * (10**4 + 1) * (2 * 100 + 2)
    reason = too_large(env, agent_params("bocd_ts", max_hypotheses=10**5), 10**5, NUMPY)
    assert reason is not None and reason.endswith("lower agent.max_hypotheses or run.batch_size")


@dataclass
class HoardParams:
    name: str = "hoard"
    slots: int = 1000


class Declared(UniformRandom):
    """A plugin-like agent whose memory grows with its own ``slots``, declared."""

    Params = HoardParams

    @classmethod
    def memory(cls, params: Any, sizes: Sizes) -> dict[str, int]:
        return {"agent.slots": 8 * sizes.n_runs * params.slots}


class DeclaredPerArm(Declared):
    @classmethod
    def memory(cls, params: Any, sizes: Sizes) -> dict[str, int]:
        return {"agent.slots, env.n_arms": 8 * sizes.n_runs * params.slots * sizes.n_arms}


def test_a_plugins_declaration_names_its_own_keys() -> None:
    sizes = sizes_of(Synthetic, SyntheticParams(), 3)
    params = HoardParams(slots=10**15)
    assert agent_memory(Declared, params, SyntheticParams(), sizes) == {"agent.slots": 24 * 10**15}
    per_arm = agent_memory(DeclaredPerArm, params, SyntheticParams(), sizes)
    assert per_arm == {"agent.slots, env.n_arms": 5 * 24 * 10**15}


@pytest.mark.parametrize(
    ("declaration", "message"),
    [
        ({"agent.slot": 1}, "agent 'hoard': memory(params, sizes) names 'agent.slot', not a"),
        ({"run.seed": 1}, "names 'run.seed', not a config key of its own"),
        ({"agent.slots, env.arms": 1}, "names 'agent.slots, env.arms', not a config key"),
        ({"agent.slots": -1}, "gives agent.slots -1 bytes, not an integer >= 0"),
        ({"agent.slots": 2.5}, "gives agent.slots 2.5 bytes, not an integer >= 0"),
        ({"agent.slots": True}, "gives agent.slots True bytes"),
        ([("agent.slots", 1)], "returned list, not a dict from config keys to bytes"),
        (ZeroDivisionError("division by zero"), "raised ZeroDivisionError: division by zero"),
        (SystemExit(3), "raised SystemExit: 3"),
    ],
)
def test_a_malformed_declaration_is_one_line_naming_the_plugin(
    declaration: object, message: str
) -> None:
    class Broken(UniformRandom):
        Params = HoardParams

        @classmethod
        def memory(cls, params: Any, sizes: Sizes) -> Any:
            if isinstance(declaration, BaseException):
                raise declaration
            return declaration

    sizes = sizes_of(Synthetic, SyntheticParams(), 3)
    with pytest.raises(Malformed) as refused:
        agent_memory(Broken, HoardParams(), SyntheticParams(), sizes)
    assert message in str(refused.value) and "\n" not in str(refused.value)


class Contextual(Synthetic):
    """A plugin-like environment: contexts of dimension ``period``, and a table of its own
    that grows with ``switch_prob`` (any key of its own does)."""

    contextual = True

    @staticmethod
    def sizes(p: SyntheticParams, n_runs: int) -> Sizes:
        return Sizes(n_runs, p.horizon, p.n_arms, p.n_states, p.period, "env.period")

    @staticmethod
    def memory(p: SyntheticParams, sizes: Sizes) -> dict[str, int]:
        return {"env.switch_prob": 5 * sizes.n_runs}


def test_an_environment_declares_its_sizes_and_memory() -> None:
    params = SyntheticParams(period=6)
    sizes = sizes_of(Contextual, params, 2)
    assert (sizes.n_runs, sizes.n_features, sizes.features_key) == (2, 6, "env.period")
    assert env_memory(Contextual, params, sizes) == {"env.switch_prob": 10}
    # an agent's default statistics (a regression per state) grow with the contexts' key
    mts = agent_memory(AGENTS["mts"], agent_params("mts"), params, sizes)
    assert mts == {"env.period": 8 * 2 * params.n_states * (6 * 6 + 6)}


class NotAKey(Contextual):
    @staticmethod
    def sizes(p: SyntheticParams, n_runs: int) -> Sizes:
        return Sizes(n_runs, p.horizon, p.n_arms, p.n_states, 3, "env.dimension")


def test_an_environments_sizes_must_name_its_own_key() -> None:
    with pytest.raises(Malformed, match="names 'env.dimension' as the key of the contexts'"):
        sizes_of(NotAKey, SyntheticParams(), 2)


def test_a_malformed_declaration_refuses_the_run_in_one_line(tmp_path: Path) -> None:
    """A plugin's declaration with a key it does not have: refused before anything is made."""
    points = {GROUP: {"hoard": "tests.runner.test_memory:Undeclarable"}}
    fake_distribution(tmp_path / "site", "hoard-plugin", "0.1", points)
    path = os.pathsep.join([str(tmp_path / "site"), str(REPO)])
    done = nslb_with(path, "run", "agent=hoard", cwd=tmp_path)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert "agent 'hoard': memory(params, sizes) names 'agent.slot'" in lines[0]
    assert not (tmp_path / "outputs").exists()


class Undeclarable(Declared):
    @classmethod
    def memory(cls, params: Any, sizes: Sizes) -> dict[str, int]:
        return {"agent.slot": 1}


def test_more_seeds_than_memory_can_list_is_refused_naming_run_n_seeds(tmp_path: Path) -> None:
    """Not an out-of-memory error blaming run.batch_size after the folder was made."""
    done = nslb("run", "run.n_seeds=100000000000", "run.batch_size=1", cwd=tmp_path)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and lines[0].endswith("lower run.n_seeds")
    assert not (tmp_path / "outputs").exists()
