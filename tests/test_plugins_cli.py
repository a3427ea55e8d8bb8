"""A plugin agent through the command line, as a researcher uses it (fast: no pip install).

The example plugin's source is put on PYTHONPATH with a dist-info folder declaring the
entry points of its pyproject.toml; tests/test_example_plugin.py installs it with pip, and
tests/jax_engine/test_plugin.py runs ``nslb check`` on it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from nslb_cli.agents import GROUP
from tests.helpers.plugins import fake_distribution, fake_example_install, nslb_with

QUICK = ["env.horizon=60", "run.progress=false"]


@pytest.fixture
def plugin_path(tmp_path: Path) -> str:
    return fake_example_install(tmp_path / "site")


def test_list_shows_the_plugin_with_its_parameters(tmp_path: Path, plugin_path: str) -> None:
    listed = nslb_with(plugin_path, "list", cwd=tmp_path)
    assert listed.returncode == 0 and listed.stderr == ""
    (line,) = [x for x in listed.stdout.splitlines() if x.strip().startswith("epsilon_greedy")]
    assert line.split() == [
        "epsilon_greedy", "epsilon=0.1", "restart_every=200", "[plugin:", "nslb-epsilon-greedy]"
    ]  # fmt: skip
    assert "umts" in listed.stdout


def test_a_sweep_over_built_in_and_plugin_agents(tmp_path: Path, plugin_path: str) -> None:
    sweep = nslb_with(
        plugin_path, "run", "-m", "agent=mts,epsilon_greedy", *QUICK, "run.n_seeds=2",
        cwd=tmp_path,
    )  # fmt: skip
    assert sweep.returncode == 0, sweep.stderr
    for agent in ("mts", "epsilon_greedy"):
        folder = tmp_path / f"outputs/default/synthetic/{agent}/env.horizon=60"
        assert sorted(p.name for p in folder.glob("seed=*.csv")) == ["seed=0.csv", "seed=1.csv"]
        assert len(pd.read_csv(folder / "seed=1.csv")) == 60
        config = yaml.safe_load((folder / "config.yaml").read_text())
    assert config["agent"] == {"name": "epsilon_greedy", "epsilon": 0.1, "restart_every": 200}


VALIDATION = """
from nslb_cli.runner.compose import check_command_line
from nslb_cli.common.errors import ConfigError

for override in {overrides!r}:
    try:
        check_command_line(["agent=epsilon_greedy", override], multirun=False)
    except ConfigError as err:
        print(err)
"""
INVALID = {
    "agent.epsilon=1.5": "agent.epsilon: must be in [0, 1], got 1.5",
    "agent.restart_every=-1": "agent.restart_every: must be >= 0, got -1",
    "agent.epsilon=lots": "agent.epsilon: Value 'lots' of type 'str' could not be converted to "
    "Float",
    "+agent.epsilom=0.2": "agent.epsilom: unknown key for agent 'epsilon_greedy' (did you "
    "mean agent.epsilon?); valid keys: name, epsilon, restart_every",
    # not Hydra's advice to add the key with +, which would be refused as above
    "agent.epsilom=0.2": "agent.epsilom: unknown key for agent 'epsilon_greedy' (did you "
    "mean agent.epsilon?); valid keys: name, epsilon, restart_every",
}


def test_plugin_parameters_are_validated_as_built_ins_are(tmp_path: Path, plugin_path: str) -> None:
    code = VALIDATION.format(overrides=list(INVALID))
    done = subprocess.run(
        [sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": plugin_path},
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert done.stdout.splitlines() == list(INVALID.values())


def test_broken_plugins_are_reported_and_the_rest_still_works(tmp_path: Path) -> None:
    site = tmp_path / "site"
    fake_distribution(
        site, "bad-plugin", "1.0", {GROUP: {"broken": "no_such_module:Agent", "twin": "x:Y"}}
    )
    fake_distribution(site, "other-plugin", "2.0", {GROUP: {"twin": "x:Y"}})
    run = nslb_with(str(site), "run", "agent=random", *QUICK, "run.n_seeds=1", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    warnings = [line for line in run.stderr.splitlines() if line.startswith("nslb: warning:")]
    assert warnings == [  # found without importing; 'broken', not chosen, is not imported
        "nslb: warning: agent 'twin' (bad-plugin 1.0, other-plugin 2.0) is declared by more "
        "than one package: neither is used",
    ]
    assert (tmp_path / "outputs/default/synthetic/random/env.horizon=60/seed=0.csv").is_file()
    chosen = nslb_with(str(site), "run", "agent=broken", *QUICK, cwd=tmp_path)
    assert chosen.returncode == 2
    assert chosen.stderr.splitlines()[-1] == (
        "nslb: error: agent.name: agent 'broken' (bad-plugin 1.0): cannot use "
        "no_such_module:Agent: ModuleNotFoundError: No module named 'no_such_module'"
    )


TINY_ENV = """
from dataclasses import dataclass

from nslb_cli.envs.synthetic import Synthetic, SyntheticParams


@dataclass
class TinyParams(SyntheticParams):
    name: str = "tiny"
    n_arms: int = 3
    horizon: int = 40


class Tiny(Synthetic):
    Params = TinyParams
"""


def test_a_plugin_environment_runs_and_checks_agents(tmp_path: Path) -> None:
    site = tmp_path / "site"
    fake_distribution(site, "tiny-env", "0.1", {"nslb.envs": {"tiny": "tiny_env:Tiny"}})
    (site / "tiny_env.py").write_text(TINY_ENV)
    run = nslb_with(
        str(site), "run", "env=tiny", "agent=mts", "env.sigma=0.1", "run.n_seeds=2",
        "run.progress=false", cwd=tmp_path,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    frame = pd.read_csv(tmp_path / "outputs/default/tiny/mts/env.sigma=0.1/seed=1.csv")
    assert len(frame) == 40 and frame.action.max() < 3
    checked = nslb_with(str(site), "check", "agent=random", "env=tiny", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.splitlines()[1] == "  tiny"
