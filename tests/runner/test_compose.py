"""Every config file composes and validates; every bad input is refused in one line."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from hydra import compose, initialize_config_module

from nslb_cli.agents import AGENTS
from nslb_cli.common.validators import ConfigError
from nslb_cli.envs import ENVIRONMENTS
from nslb_cli.runner.compose import (
    CONFIG_MODULE,
    _sweep_points,
    check_command_line,
    folder_name,
    load,
    register_options,
    validate,
)
from tests.helpers.cli import nslb
from tests.helpers.paths import CONF


def options(group: str) -> list[str]:
    root = CONF / group
    return sorted(str(p.relative_to(root).with_suffix("")) for p in root.rglob("*.yaml"))


@pytest.mark.parametrize("agent", options("agent"))
@pytest.mark.parametrize("env", options("env"))
def test_every_env_and_agent_composes(env: str, agent: str) -> None:
    with initialize_config_module(CONFIG_MODULE, version_base="1.3"):
        cfg = compose("config", overrides=[f"env={env}", f"agent={agent}"])
        kind = env.split("/")[0]  # piecewise/problem_1 is a preset of piecewise
        if ENVIRONMENTS[kind].contextual and AGENTS[agent].fixed_arms:
            with pytest.raises(ConfigError, match=f"^agent: {agent} learns each arm's rewards"):
                validate(cfg)
            return
        latent = getattr(ENVIRONMENTS[kind], "latent", "discrete")
        if AGENTS[agent].latent_model not in (None, latent):
            with pytest.raises(ConfigError, match=f"^agent: {agent} needs an? \\w+ latent model"):
                validate(cfg)
            return
        outcome_laws = getattr(ENVIRONMENTS[kind], "outcome_laws", False)
        if getattr(AGENTS[agent], "needs_outcome_laws", False) and not outcome_laws:
            with pytest.raises(ConfigError, match=f"^agent: {agent} needs known outcome laws"):
                validate(cfg)
            return
        config = validate(cfg)
    assert config.env.name == kind
    assert config.agent.name == agent


@pytest.mark.parametrize("experiment", options("experiment"))
def test_every_experiment_preset_composes(experiment: str) -> None:
    assert check_command_line([f"experiment={experiment}"], multirun=False).jobs >= 1


def test_sweep_counts_every_point() -> None:
    assert check_command_line(["agent=umts", "agent.num_particles=10,100,1000"], True).jobs == 3
    assert check_command_line(["agent=mts,umts", "env.dynamics=fixed,markov"], True).jobs == 4


SWEEP = [
    "run.n_seeds=3",
    "agent=random,oracle",
    "env.horizon=4,5",
    "run.seed=range(0,4,2)",
    "++env.sigma=0.5",
    "run.n_seeds=1",  # replaces the first in its place
]


def test_the_check_expands_a_sweep_into_hydras_jobs_in_hydras_order(tmp_path: Path) -> None:
    """The check validates the jobs Hydra's basic sweeper launches (expanded with Hydra's
    public API), in its order: job ``#n``'s overrides as Hydra's launcher logs them."""
    overrides = [*SWEEP, f"hydra.sweep.dir={tmp_path}"]
    register_options()
    with initialize_config_module(CONFIG_MODULE, version_base="1.3"):
        points, _ = _sweep_points(overrides, multirun=True)
    done = nslb("run", "-m", *overrides, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    launched = re.findall(r"\t#(\d+) : (.*)", done.stdout + done.stderr)
    assert [int(n) for n, _ in launched] == list(range(8))
    assert [job.split() for _, job in launched] == [p[:-1] for p in points]
    assert points[1][:4] == ["run.n_seeds=1", "agent=random", "env.horizon=4", "run.seed=2"]


def test_a_sweep_refuses_an_interval_naming_the_key() -> None:
    with pytest.raises(ConfigError, match=r"^agent\.tau: 'agent\.tau=interval\(1,9\)': a sweep"):
        check_command_line(["agent=cd_ucb", "agent.tau=interval(1,9)"], multirun=True)


INVALID = [
    (["env=nowhere"], "Could not find 'env/nowhere'"),
    (["agent=nobody"], "Could not find 'agent/nobody'"),
    (["agent=umts", "agent.num_particles=0"], "agent.num_particles: must be > 0"),
    (["agent=umts", "agent.num_particles=-5"], "agent.num_particles: must be > 0"),
    (["agent=umts", "agent.num_particles=many"], "agent.num_particles: Value 'many'"),
    (["agent=umts", "agent.num_particles=2.5"], "agent.num_particles: Value '2.5'"),
    (["agent=umts", "agent.action_selection=best"], "agent.action_selection: must be one of"),
    (["agent=umts", "agent.resampling=residual"], "agent.resampling: must be one of"),
    (["agent=umts", "agent.resample_threshold=1.5"], "agent.resample_threshold: must be in"),
    (["env.switch_prob=1.01"], "env.switch_prob: must be in [0, 1]"),
    (["env.switch_prob=-0.5"], "env.switch_prob: must be in [0, 1]"),
    (["env.horizon=0"], "env.horizon: must be > 0"),
    (["env.horizon=-10"], "env.horizon: must be > 0"),
    (["env.dynamics=sometimes"], "env.dynamics: must be one of fixed, markov"),
    (["env.model=maybe"], "env.model: must be one of known, prior"),
    (["run.n_seeds=0"], "run.n_seeds: must be > 0"),
    (["run.seed=-1"], "run.seed: must be >= 0"),
    (["+agent.typo=1"], "agent.typo: unknown key for agent 'mts'"),
    (["+env.horizn=5"], "env.horizn: unknown key for env 'synthetic'"),
    (["+typo=1"], "typo: unknown top-level key"),
    (["agent.typo=1"], "agent.typo: unknown key for agent 'mts'"),  # not Hydra's advice to add it
    (["env.sigma=inf"], "env.sigma: must be a finite number"),
    (["env.sigma=nan"], "env.sigma: must be a finite number"),
    (["env.sigma=1e-300"], "env.sigma: must be >= 1e-06"),
    (["env.stay_concentration=0.001"], "env.stay_concentration: must be >= 0.01"),
    (["name=../../elsewhere"], "name: must be folder names"),
    (["name=/abs/path"], "name: must be folder names"),
]


@pytest.mark.parametrize(("overrides", "message"), INVALID, ids=[" ".join(o) for o, _ in INVALID])
def test_invalid_command_lines_are_refused(overrides: list[str], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        check_command_line(overrides, multirun=False)
    text = str(caught.value)
    assert message in text
    assert "\n" not in text, "one line"


def test_agent_specific_overrides_in_an_agent_sweep() -> None:
    """Hydra applies non-swept overrides to the default agent first: the error says to use
    ``++``, which then works for every swept agent that has the key."""
    with pytest.raises(ConfigError, match=r"write \+\+agent\.gamma=0\.1"):
        check_command_line(["agent=cd_ucb,cd_ts", "agent.gamma=0.1"], multirun=True)
    assert check_command_line(["agent=cd_ucb,cd_ts", "++agent.gamma=0.1"], multirun=True).jobs == 2


def test_folder_names_ignore_plus_prefixes_and_order() -> None:
    assert folder_name("++agent.tau=50,env.horizon=3") == "agent.tau=50,env.horizon=3"
    assert folder_name("z.b=1,+a.c=2") == "a.c=2,z.b=1"
    assert folder_name("agent.tau=[1,2],env.x=3") == "agent.tau=[1,2],env.x=3"
    assert folder_name("") == ""


def test_the_last_seeds_a_run_may_have_end_at_the_largest_int64() -> None:
    """run.seed + run.n_seeds - 1 = 2^63 - 1 is valid; the seeds' range once stopped at 2^63,
    which numpy turned to floats and then refused with a traceback."""
    seeds = load(["run.seed=9223372036854775806", "run.n_seeds=2"]).seeds
    assert seeds.dtype == np.int64 and seeds.tolist() == [2**63 - 2, 2**63 - 1]
