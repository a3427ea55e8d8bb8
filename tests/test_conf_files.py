"""nslb's own config files: one per built-in environment, equal to its Params defaults;
one study per tunable agent.

Built-in agents and environments register as entry points, like plugins; the environments'
YAML files in conf/ are the documented form of their Params defaults (agents' and plugins'
options are generated from Params). These tests keep the two from drifting apart.
"""

from __future__ import annotations

from dataclasses import MISSING, fields

import yaml

from nslb_cli.envs import ENVIRONMENTS
from tests.helpers.paths import CONF

OWN = "nslb-cli"
GROUPS = {"env": ENVIRONMENTS}
BUILT_IN = [
    (group, name)
    for group, registry in GROUPS.items()
    for name in registry
    if registry.package(name) == OWN
]


def test_one_config_file_per_built_in_environment() -> None:
    for group, registry in GROUPS.items():
        files = {p.stem for p in (CONF / group).glob("*.yaml")}
        assert files == {name for name in registry if registry.package(name) == OWN}, group


def test_every_config_file_lists_and_comments_every_parameter_at_its_default() -> None:
    for group, name in BUILT_IN:
        path = CONF / group / f"{name}.yaml"
        config = yaml.safe_load(path.read_text())
        params = GROUPS[group][name].Params
        assert list(config) == [f.name for f in fields(params)], path.name
        defaults = {
            f.name: f.default if f.default_factory is MISSING else f.default_factory()
            for f in fields(params)
        }
        assert config == defaults, f"{group}={name}: the defaults disagree"
        lines = path.read_text().splitlines()
        assert lines[0].startswith("#"), f"{group}={name}: the file starts with what it is"
        for key in config:
            if key != "name":
                (line,) = [x for x in lines if x.startswith(f"{key}:")]
                assert "#" in line, f"{group}={name}: {key} has no comment"


STUDIES = sorted(p.stem for p in (CONF / "hparams_search").glob("*.yaml"))


def test_every_study_tunes_its_agent_over_values_it_takes() -> None:
    """The check composes and validates each end of every parameter's search space."""
    from nslb_cli.runner.compose import check_command_line

    for agent in STUDIES:
        space = yaml.safe_load((CONF / f"hparams_search/{agent}.yaml").read_text())
        assert all(key.startswith("agent.") for key in space["hydra"]["sweeper"]["params"])
        plan = check_command_line([f"hparams_search={agent}"], multirun=True)
        assert plan.study is not None and plan.study.agent == agent
