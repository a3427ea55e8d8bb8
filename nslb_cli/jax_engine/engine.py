"""How a job's batch is simulated with the JAX engine (what it covers: ``.coverage``)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from nslb_cli.bandit.trace import Trace, check_decisions
from nslb_cli.jax_engine import sweep
from nslb_cli.jax_engine.agents import JAX_AGENTS, built_in
from nslb_cli.jax_engine.contract import JaxAgent, Setting
from nslb_cli.jax_engine.scan import simulate_batch
from nslb_cli.jax_engine.worlds import WORLDS


def world_of(env: Any) -> Any:
    """The engine's world for environment params ``env``."""
    return WORLDS[env.name].of(env)


def agent_of(params: Any, world: Any) -> JaxAgent:
    """The engine's agent for agent params ``params`` in ``world``."""
    setting = Setting(world.problem, world.learns_transitions, world.learns_means)
    cls: type = JAX_AGENTS[params.name]
    agent: JaxAgent = cls(params, setting)
    return agent


def group_keys(jobs: Sequence[tuple[Any, Any, tuple[int, int]]]) -> list[str | None]:
    """The group key of each of a sweep's jobs, ``(env params, agent params, (batch size,
    every))``: jobs of one key differ only in traced parameters and can share a program and
    its batches (``.sweep``); ``None``: never grouped (a plugin's)."""
    return sweep.group_keys(jobs, WORLDS.get, built_in)


def plan_sweep(
    jobs: Sequence[tuple[Any, Any, tuple[int, int]]], fits: sweep.Fits
) -> sweep.SharedBatches:
    """What a sweep's jobs (as ``group_keys`` takes them, in the order they run) share:
    those that differ only in traced parameters share programs and batches (``.sweep``),
    as many lanes as ``fits`` (env, agent, lanes) allows."""
    return sweep.plan(jobs, WORLDS.get, built_in, fits)


def simulate_seeds(
    env: Any,
    agent: Any,
    seeds: np.ndarray,
    batch_size: int,
    every: int = 1,
    shared: sweep.SharedBatches | None = None,
) -> Trace:
    """The trace of ``seeds`` (one batch of at most ``batch_size``) for params ``env`` and
    ``agent``, holding the rounds ``every`` keeps: compiled once per job and batch size, or
    once per group of the sweep whose jobs ``shared`` holds (``plan_sweep``), whose
    next jobs' lanes fill the batch."""
    seeds, job = np.asarray(seeds, dtype=np.int64), (env, agent)
    shared = sweep.SharedBatches() if shared is None else shared
    names = sweep.traced(job, WORLDS.get, built_in)
    key = sweep.group_key(job, (batch_size, every), names) if any(names) else ""  # alone
    found = shared.take(key, job, names, seeds)
    if found is not None:
        return found
    group = shared.members(key, job)
    static_env, static_agent = sweep.static_params(job, group, names)
    world = world_of(static_env)
    built = agent_of(static_agent, world)
    per = max(len(seeds), 1)
    most = shared.jobs_per_batch(key, (static_env, built.params), group, per, batch_size)
    jobs = [job, *shared.companions(key, job, names, most - 1)]
    lanes = sweep.lanes(jobs, names, seeds)
    start = time.perf_counter()
    trace = simulate_batch(world, built, np.tile(seeds, len(jobs)), per * most, lanes, every)
    trace.seconds = time.perf_counter() - start  # shared by ``jobs``: ``keep`` splits it
    check_decisions(trace, world.problem.n_arms, world.problem.n_states)
    return shared.keep(key, jobs, names, seeds, trace)
