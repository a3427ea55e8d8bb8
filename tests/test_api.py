"""The public interface for plugins, and the plugins guide's example of it."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest
import tomllib

import nslb_cli.api
from nslb_cli.agents.base import Agent, Belief, Style
from nslb_cli.bandit import problem, rewards, rng, world
from nslb_cli.cli import main
from nslb_cli.common import errors, validators
from nslb_cli.jax_engine import contract
from tests.helpers.paths import EXAMPLE, REPO
from tests.helpers.plugins import example_entry_points

GUIDE = (REPO / "docs" / "guide" / "plugins.md").read_text()


# What nslb_cli/api.py's docstring promises of each public name: the very objects nslb's own
# code uses (nslb's agents derive from the same Agent, its environments build the same World,
# the registry checks plugins against them) ...
PROMISED = {
    "Agent": Agent,
    "BatchRNG": rng.BatchRNG,
    "Belief": Belief,
    "Bernoulli": rewards.Bernoulli,
    "ConfigError": errors.ConfigError,
    "Decision": contract.Decision,
    "Gaussian": rewards.Gaussian,
    "JaxAgent": contract.JaxAgent,
    "JaxModel": contract.Model,
    "JaxSetting": contract.Setting,
    "JaxTruth": contract.Truth,
    "OfflineModel": problem.OfflineModel,
    "Problem": problem.Problem,
    "RewardModel": rewards.RewardModel,
    "Sizes": problem.Sizes,
    "Stream": rng.Stream,
    "Style": Style,
    "Truth": problem.Truth,
    "World": world.World,
    "check": validators,
    "generator": rng.generator,
}
# ... with the members it names
DOCUMENTED = {
    "Agent": [
        "act", "update", "belief", "summary", "fixed_arms", "sees_truth", "memory",
        "display_name", "legend_rank", "style",
    ],
    "BatchRNG": ["random", "normal", "integers", "beta"],
    "OfflineModel": ["expected_rewards"],
    "RewardModel": [
        "log_likelihood", "prior", "update", "predictive_log_likelihood", "sample", "noise",
        "realise",
    ],
    "Stream": ["PARAMETERS", "PATH", "NOISE", "CONTEXTS"],
    "check": ["positive", "probability", "one_of"],
}  # fmt: skip
FIELDS = {
    "Problem": {"n_arms", "n_states", "horizon", "n_runs", "reward_model", "sigma"},
    "OfflineModel": {"means", "mean_sd", "transitions", "concentration", "initial", "covariance"},
    "Belief": {"state", "posterior"},
    "Truth": {"states", "mean_rewards"},
    "Sizes": {"n_runs", "horizon", "n_arms", "n_states", "n_features", "features_key"},
    "Style": {"color", "linestyle", "marker"},
}


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", GUIDE, flags=re.DOTALL)


def test_the_public_names_are_stable() -> None:
    """Changing this list is a breaking change for plugins (nslb_cli/api.py)."""
    assert nslb_cli.api.__all__ == [
        "Agent", "BatchRNG", "Belief", "Bernoulli", "ConfigError", "Decision", "Gaussian",
        "JaxAgent", "JaxModel", "JaxSetting", "JaxTruth", "OfflineModel", "Problem",
        "RewardModel", "Sizes", "Stream", "Style", "Truth", "World", "check", "generator",
    ]  # fmt: skip
    api = nslb_cli.api
    for name in api.__all__:
        assert getattr(api, name) is PROMISED[name], f"nslb_cli.api.{name}"
    for name, members in DOCUMENTED.items():
        missing = [m for m in members if not hasattr(getattr(api, name), m)]
        assert not missing, f"nslb_cli.api.{name} lacks {missing}"
    for name, fields in FIELDS.items():
        assert fields <= {f.name for f in dataclasses.fields(getattr(api, name))}, name
    assert issubclass(api.Gaussian, api.RewardModel) and issubclass(api.Bernoulli, api.RewardModel)
    assert issubclass(api.ConfigError, ValueError)
    generators = [*api.BatchRNG([3, 4]).generators, api.generator(3, api.Stream.NOISE)]
    assert all(isinstance(g, np.random.Generator) for g in generators)


def test_the_guides_example_is_the_example_plugin_the_tests_run() -> None:
    (code,) = blocks("python")
    assert code == (EXAMPLE / "src/nslb_epsilon_greedy/agent.py").read_text()
    (toml,) = blocks("toml")
    assert tomllib.loads(toml)["project"]["entry-points"] == example_entry_points()


@pytest.mark.slow  # the guide's copy: check's own lines are tested in tests/cli/test_check.py
def test_the_guide_shows_what_nslb_check_prints(capsys: pytest.CaptureFixture[str]) -> None:
    (shown,) = re.findall(r"```\n\$ nslb check agent=mts\n(.*?)```", GUIDE, flags=re.DOTALL)
    main(["check", "agent=mts"])
    assert capsys.readouterr().out == shown
