"""Agents. ``AGENTS`` is the one registry that maps the config's ``agent.name`` to a class."""

from __future__ import annotations

from nslb_cli.agents.base import Agent, Belief
from nslb_cli.agents.particle import UncertainModelThompsonSampling
from nslb_cli.agents.reference import Oracle, UniformRandom
from nslb_cli.agents.thompson import ModelThompsonSampling

AGENTS: dict[str, type[Agent]] = {
    "mts": ModelThompsonSampling,
    "umts": UncertainModelThompsonSampling,
    "oracle": Oracle,
    "random": UniformRandom,
}

__all__ = ["AGENTS", "Agent", "Belief"]
