"""nslb's own config files: one per built-in entry point, equal to its Params defaults.

Built-in agents and environments register as entry points, like plugins; their YAML files in
conf/ are the documented form of their Params defaults (plugins get theirs generated from
Params). These tests keep the two from drifting apart.
"""

from __future__ import annotations

from dataclasses import MISSING, fields

import pytest
import yaml

from nslb_cli.agents import AGENTS
from nslb_cli.common.registry import Registry
from nslb_cli.envs import ENVIRONMENTS
from tests.helpers.paths import CONF

OWN = "nslb-cli"
GROUPS = {"agent": AGENTS, "env": ENVIRONMENTS}
BUILT_IN = [
    (group, name)
    for group, registry in GROUPS.items()
    for name in registry
    if registry.package(name) == OWN
]


@pytest.mark.parametrize(("group", "registry"), GROUPS.items(), ids=GROUPS.keys())
def test_one_config_file_per_built_in_entry_point(group: str, registry: Registry) -> None:
    files = {p.stem for p in (CONF / group).glob("*.yaml")}
    assert files == {name for name in registry if registry.package(name) == OWN}


@pytest.mark.parametrize(("group", "name"), BUILT_IN, ids=[f"{g}={n}" for g, n in BUILT_IN])
def test_config_file_lists_and_comments_every_parameter(group: str, name: str) -> None:
    path = CONF / group / f"{name}.yaml"
    config = yaml.safe_load(path.read_text())
    params = GROUPS[group][name].Params
    assert list(config) == [f.name for f in fields(params)]
    defaults = {
        f.name: f.default if f.default_factory is MISSING else f.default_factory()
        for f in fields(params)
    }
    assert config == defaults, "defaults agree"
    lines = path.read_text().splitlines()
    assert lines[0].startswith("#"), "the file starts with what it is"
    for key in config:
        if key != "name":
            (line,) = [x for x in lines if x.startswith(f"{key}:")]
            assert "#" in line, f"{key} has no comment"


UNTUNED = {"mts", "umts", "oracle", "random", "kalman_oracle"}  # samplers; references
STUDIES = sorted(p.stem for p in (CONF / "hparams_search").glob("*.yaml"))


def test_every_tunable_built_in_agent_has_a_study() -> None:
    built_in = {name for name in AGENTS if AGENTS.package(name) == OWN}
    assert set(STUDIES) == built_in - UNTUNED


@pytest.mark.parametrize("agent", STUDIES)
def test_each_study_tunes_its_agent_over_values_it_takes(agent: str) -> None:
    """The check composes and validates each end of every parameter's search space."""
    from nslb_cli.runner.compose import check_command_line

    space = yaml.safe_load((CONF / f"hparams_search/{agent}.yaml").read_text())
    assert all(key.startswith("agent.") for key in space["hydra"]["sweeper"]["params"])
    plan = check_command_line([f"hparams_search={agent}"], multirun=True)
    assert plan.study is not None and plan.study.agent == agent
