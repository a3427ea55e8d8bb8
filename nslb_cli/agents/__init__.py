"""Agents. ``AGENTS`` is the one registry that maps the config's ``agent.name`` to a class."""

from __future__ import annotations

from nslb_cli.agents.base import Agent, Belief
from nslb_cli.agents.changepoint import CDTS, CDUCB
from nslb_cli.agents.exp import Exp3S, Exp4S
from nslb_cli.agents.linear_changepoint import CDLinTS, CDLinUCB
from nslb_cli.agents.particle import UncertainModelThompsonSampling
from nslb_cli.agents.reference import Oracle, UniformRandom
from nslb_cli.agents.thompson import ModelThompsonSampling
from nslb_cli.agents.ucb import SlidingWindowModelUCB, SlidingWindowUncertainModelUCB

AGENTS: dict[str, type[Agent]] = {
    "mts": ModelThompsonSampling,
    "umts": UncertainModelThompsonSampling,
    "oracle": Oracle,
    "random": UniformRandom,
    "exp3s": Exp3S,
    "exp4s": Exp4S,
    "cd_ucb": CDUCB,
    "cd_ts": CDTS,
    "cd_linucb": CDLinUCB,
    "cd_lints": CDLinTS,
    "sw_mucb": SlidingWindowModelUCB,
    "sw_umucb": SlidingWindowUncertainModelUCB,
}

__all__ = ["AGENTS", "Agent", "Belief"]
