"""The public interface for plugins, and the README's example of it."""

from __future__ import annotations

import re

import pytest
import tomllib

import nslb_cli.api
from nslb_cli.cli import main
from tests.conftest import REPO
from tests.plugins import EXAMPLE, example_entry_points

README = (REPO / "README.md").read_text()
SECTION = README.split("## Add your own agent")[1].split("\n## ")[0]


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", SECTION, flags=re.DOTALL)


def test_the_public_names_are_stable() -> None:
    """Changing this list is a breaking change for plugins (nslb_cli/api.py)."""
    assert nslb_cli.api.__all__ == [
        "Agent", "BatchRNG", "Belief", "ConfigError", "OfflineModel", "Problem", "Stream",
        "Truth", "World", "check", "generator",
    ]  # fmt: skip
    for name in nslb_cli.api.__all__:
        assert getattr(nslb_cli.api, name) is not None


def test_the_readme_example_is_the_example_plugin_the_tests_run() -> None:
    (code,) = blocks("python")
    assert code == (EXAMPLE / "src/nslb_epsilon_greedy/agent.py").read_text()
    (toml,) = blocks("toml")
    assert tomllib.loads(toml)["project"]["entry-points"] == example_entry_points()


def test_the_readme_shows_what_nslb_check_prints(capsys: pytest.CaptureFixture[str]) -> None:
    (shown,) = re.findall(r"```\n\$ nslb check agent=mts\n(.*?)```", SECTION, flags=re.DOTALL)
    main(["check", "agent=mts"])
    assert capsys.readouterr().out == shown
