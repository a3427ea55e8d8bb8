"""What the JAX engine covers and how a job's batch is simulated with it."""

from __future__ import annotations

from typing import Any

import numpy as np

from nslb_cli.bandit.trace import Trace
from nslb_cli.jax_engine.changepoint import CDTS, CDUCB
from nslb_cli.jax_engine.contract import JaxAgent, Setting
from nslb_cli.jax_engine.exp import Exp4S
from nslb_cli.jax_engine.mts import MTS
from nslb_cli.jax_engine.mucb import SWMUCB
from nslb_cli.jax_engine.reference import Oracle, Random
from nslb_cli.jax_engine.scan import simulate_batch
from nslb_cli.jax_engine.umts import UMTS
from nslb_cli.jax_engine.worlds import WORLDS

AGENTS: dict[str, type] = {
    "mts": MTS,
    "umts": UMTS,
    "sw_mucb": SWMUCB,
    "cd_ucb": CDUCB,
    "cd_ts": CDTS,
    "exp4s": Exp4S,
    "oracle": Oracle,
    "random": Random,
}
"""The agents the JAX engine covers, by ``agent.name`` (their names: :mod:`.coverage`)."""


def world_of(env: Any) -> Any:
    """The engine's world for environment params ``env``."""
    return WORLDS[env.name](env)


def agent_of(params: Any, world: Any) -> JaxAgent:
    """The engine's agent for agent params ``params`` in ``world``."""
    setting = Setting(world.problem, world.learns_transitions, world.learns_means)
    agent: JaxAgent = AGENTS[params.name](params, setting)
    return agent


def simulate_seeds(env: Any, agent: Any, seeds: np.ndarray, batch_size: int) -> Trace:
    """The trace of ``seeds`` (one batch of at most ``batch_size``) for params ``env`` and
    ``agent``, compiled once per job for batches of ``batch_size`` seeds."""
    world = world_of(env)
    return simulate_batch(world, agent_of(agent, world), seeds, min(batch_size, max(len(seeds), 1)))
