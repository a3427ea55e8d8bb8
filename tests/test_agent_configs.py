"""Every agent's config file exposes and documents every one of its parameters."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import pytest
import yaml

from nslb_cli.agents import AGENTS

AGENT_CONF = Path(__file__).resolve().parents[1] / "conf" / "agent"


@pytest.mark.parametrize("name", sorted(AGENTS))
def test_config_file_lists_and_comments_every_parameter(name: str) -> None:
    path = AGENT_CONF / f"{name}.yaml"
    config = yaml.safe_load(path.read_text())
    assert list(config) == [f.name for f in fields(AGENTS[name].Params)]
    assert config == {f.name: f.default for f in fields(AGENTS[name].Params)}, "defaults agree"
    lines = path.read_text().splitlines()
    assert lines[0].startswith("#"), "the file starts with what the agent is"
    for key in config:
        if key != "name":
            (line,) = [x for x in lines if x.startswith(f"{key}:")]
            assert "#" in line, f"{key} has no comment"
