"""Entry-point discovery: plugins found, imported on use, and refused in one line when broken."""

from __future__ import annotations

import sys
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

from nslb_cli.agents import AGENTS, GROUP, check_agent_class
from nslb_cli.common import registry as registry_module
from nslb_cli.common.registry import PluginError, Registry
from nslb_cli.envs import GROUP as ENV_GROUP
from nslb_cli.envs import check_environment_class
from tests.helpers.plugins import fake_distribution

PLUGIN = """
from dataclasses import dataclass

from nslb_cli.agents.reference import UniformRandom


@dataclass
class GoodParams:
    name: str = "good"


class Good(UniformRandom):
    Params = GoodParams


class Misnamed(UniformRandom):
    Params = GoodParams


class NotAnAgent:
    pass


class Abstract(UniformRandom.__mro__[1]):
    Params = GoodParams
"""


@pytest.fixture
def registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Registry:
    """A fresh agent registry that also sees two fake packages in ``tmp_path``; the global
    one has read its entry points before they appear, so later tests never see them."""
    list(AGENTS)
    (tmp_path / "fake_plugin.py").write_text(PLUGIN)
    agents = {
        "good": "fake_plugin:Good",
        "broken": "not_a_module.anywhere:Agent",
        "ghost": "fake_plugin:Ghost",
        "stranger": "fake_plugin:NotAnAgent",
        "abstract": "fake_plugin:Abstract",
        "misnamed": "fake_plugin:Misnamed",
        "twin": "fake_plugin:Good",
    }
    fake_distribution(tmp_path, "fake-plugin", "1.0", {GROUP: agents})
    fake_distribution(tmp_path, "other-plugin", "2.0", {GROUP: {"twin": "fake_plugin:Good"}})
    monkeypatch.syspath_prepend(str(tmp_path))
    return Registry("agent", GROUP, check_agent_class)


def test_plugins_are_listed_beside_the_built_ins_without_importing(registry: Registry) -> None:
    assert {"mts", "umts", "good", "broken", "ghost"} <= set(registry)
    assert "fake_plugin" not in sys.modules
    assert "twin" not in registry and "twin" in registry.declared()
    assert registry.package("good") == "fake-plugin" and registry.package("mts") == "nslb-cli"
    assert registry.problems() == [
        "agent 'twin' (fake-plugin 1.0, other-plugin 2.0) is declared by more than one "
        "package: neither is used"
    ]


def test_listing_reads_package_metadata_only_for_a_name_declared_twice(
    registry: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A label reads its package's metadata file (ms each): at every start, the entries
    are listed, and only the twins are ordered by package."""
    labelled: list[str] = []
    label = registry_module._label

    def counted(point: EntryPoint) -> str:
        labelled.append(point.name)
        return label(point)

    monkeypatch.setattr(registry_module, "_label", counted)
    assert "twin" in registry.declared() and "mts" in registry
    assert labelled and set(labelled) == {"twin"}


def test_a_valid_plugin_loads_like_a_built_in(registry: Registry) -> None:
    assert registry["good"].__name__ == "Good"
    assert registry["mts"] is AGENTS["mts"]


BROKEN = {
    "broken": "agent 'broken' (fake-plugin 1.0): cannot use not_a_module.anywhere:Agent: "
    "ModuleNotFoundError: No module named 'not_a_module'",
    "ghost": "agent 'ghost' (fake-plugin 1.0): cannot use fake_plugin:Ghost: "
    "AttributeError: module 'fake_plugin' has no attribute 'Ghost'",
    "stranger": "is not a subclass of nslb_cli.api.Agent",
    "abstract": "Abstract does not implement act, update",
    "misnamed": "GoodParams needs a field `name: str = 'misnamed'` (the entry point's name), "
    "got 'good'",
    "twin": "is declared by more than one package: neither is used",
}


@pytest.mark.parametrize("name", BROKEN)
def test_a_broken_plugin_fails_in_one_line_and_alone(registry: Registry, name: str) -> None:
    with pytest.raises(PluginError) as caught:
        registry[name]
    assert BROKEN[name] in str(caught.value) and "\n" not in str(caught.value)
    assert registry.problem(name) == str(caught.value)
    loaded = registry.load_all()
    assert "good" in loaded and "mts" in loaded and name not in loaded
    assert len(registry.problems()) == len(BROKEN)


ENVIRONMENT_PLUGIN = """
from dataclasses import dataclass


@dataclass
class SizedParams:
    name: str = "sized"
    n_arms: int = 2
    n_states: int = 2
    horizon: int = 10


@dataclass
class UnsizedParams:
    name: str = "unsized"


class Sized:
    Params = SizedParams
    contextual = False

    @staticmethod
    def build(params, seeds):
        raise NotImplementedError


class Unsized(Sized):
    Params = UnsizedParams


class Undeclared:
    Params = SizedParams
    build = Sized.build
"""


def test_an_environment_declares_its_sizes_and_whether_it_is_contextual(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "fake_envs.py").write_text(ENVIRONMENT_PLUGIN)
    points = {"sized": "fake_envs:Sized", "unsized": "fake_envs:Unsized"}
    points["undeclared"] = "fake_envs:Undeclared"
    fake_distribution(tmp_path, "fake-envs", "1.0", {ENV_GROUP: points})
    monkeypatch.syspath_prepend(str(tmp_path))
    registry = Registry("env", ENV_GROUP, check_environment_class)
    assert registry["sized"].Params().horizon == 10
    assert set(registry.load_all()) == {
        "synthetic", "movielens", "piecewise", "latent_ar", "switching_latent",
        "movielens_genres", "logged", "sized",
    }  # fmt: skip
    assert [p.split(": ")[-1] for p in registry.problems()] == [
        "Undeclared.contextual must be True or False",
        "UnsizedParams has no field n_arms, n_states, horizon",
    ]
