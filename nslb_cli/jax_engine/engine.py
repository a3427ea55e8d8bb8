"""What the JAX engine covers and how a job's batch is simulated with it."""

from __future__ import annotations

from collections.abc import Sequence
from importlib.metadata import entry_points
from typing import Any

import numpy as np

from nslb_cli.bandit.trace import Trace
from nslb_cli.jax_engine import coverage, sweep
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
    return WORLDS[env.name].of(env)


def agent_of(params: Any, world: Any) -> JaxAgent:
    """The engine's agent for agent params ``params`` in ``world``."""
    setting = Setting(world.problem, world.learns_transitions, world.learns_means)
    cls = AGENTS.get(params.name) or _plugin(params.name)
    agent: JaxAgent = cls(params, setting)
    return agent


def _plugin(name: str) -> type:
    """A plugin's JAX agent class (entry-point group :data:`.coverage.GROUP`)."""
    (point,) = (p for p in entry_points(group=coverage.GROUP) if p.name == name)
    cls: type = point.load()
    return cls


def plan_sweep(jobs: Sequence[tuple[Any, Any, tuple[int, int]]], fits: sweep.Fits) -> None:
    """Announce a sweep's jobs, ``(env params, agent params, (batch size, every))`` in the
    order they run: those that differ only in traced parameters share programs and batches
    (:mod:`.sweep`), as many lanes as ``fits`` (env, agent, lanes) allows."""
    sweep.plan(jobs, WORLDS, AGENTS, fits)


def simulate_seeds(
    env: Any, agent: Any, seeds: np.ndarray, batch_size: int, every: int = 1
) -> Trace:
    """The trace of ``seeds`` (one batch of at most ``batch_size``) for params ``env`` and
    ``agent``, holding the rounds ``every`` keeps: compiled once per job and batch size, or
    once per group of a planned sweep (:mod:`.sweep`), whose next jobs' lanes fill the
    batch."""
    seeds, job = np.asarray(seeds, dtype=np.int64), (env, agent)
    names = sweep.traced(job, WORLDS, AGENTS)
    key = sweep.group_key(job, (batch_size, every), names) if any(names) else ""  # alone
    found = sweep.waiting(key, job, names, seeds)
    if found is not None:
        return found
    group = sweep.members(key, job)
    static = sweep.static_params(job, group, names)
    world = world_of(static[0])
    built = agent_of(static[1], world)
    per = max(len(seeds), 1)
    most = sweep.jobs_per_batch(key, (static[0], built.params), group, per, batch_size)
    jobs = [job, *sweep.companions(key, job, names, most - 1)]
    lanes = sweep.lanes(jobs, names, seeds)
    trace = simulate_batch(world, built, np.tile(seeds, len(jobs)), per * most, lanes, every)
    return sweep.keep(key, jobs, names, seeds, trace)
