"""The JAX engine's simulation: for each seed a ``lax.scan`` over rounds in which the world
and the agent play (docs/design.md §9), ``vmap`` over the seeds of a batch, compiled once
per job and batch size.

Round ``t`` of a seed: ``S_t`` from the world's path, the agent's ``act`` (with the round's
:class:`~nslb_cli.jax_engine.contract.Truth` for an agent that sees it), ``R_t`` from the
world's noise, the agent's ``update``. The agent's keys are its stream (``Stream.AGENT``)
split into an init key and a round key, the round key folded with ``t`` and split for
``act`` and ``update``. A batch shorter than the compiled size is padded with copies of its
last seed, whose rows are dropped: a seed's numbers are its own in any batch.
"""

from __future__ import annotations

import functools
import logging
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from nslb_cli.bandit.detections import AlarmLog
from nslb_cli.bandit.rng import Stream
from nslb_cli.bandit.trace import NO_BELIEF, Trace
from nslb_cli.common.apart import forbid_forks
from nslb_cli.jax_engine import cache
from nslb_cli.jax_engine.contract import JaxAgent, Truth
from nslb_cli.jax_engine.worlds import stream

logging.getLogger("jax").setLevel(logging.WARNING)  # not "no TPU found" in every job's log
Array = Any
COLUMNS = ("action", "reward", "expected_reward", "optimal_reward", "state", "belief", "p_true")


def play(
    world_spec: Any, agent: JaxAgent, seed: Array
) -> tuple[dict[str, Array], dict[str, Array]]:
    """One seed's whole horizon: its per-round columns ``(n,)`` and the agent's summary."""
    key = jax.random.key(seed)
    world = world_spec.draw(key)
    init_key, round_key = jax.random.split(stream(key, Stream.AGENT))
    state = agent.init(world.model, init_key)

    def round_(carry: tuple[Any, Array], t: Array) -> tuple[tuple[Any, Array], tuple[Array, ...]]:
        agent_state, previous = carry
        s = world_spec.state(world, previous, t)
        means = world.true_means[s]
        act_key, update_key = jax.random.split(jax.random.fold_in(round_key, t))
        truth = Truth(s, means) if agent.sees_truth else None
        agent_state, decision = agent.act(agent_state, t, act_key, truth)
        a = decision.action
        r = world_spec.reward(world, means[a], t)
        before = agent_state
        agent_state = agent.update(agent_state, t, a, r, update_key)
        row: tuple[Array, ...] = (a, r, means[a], means.max(), s, decision.belief,
                                  decision.posterior[s])  # fmt: skip
        if count is not None:  # whether the agent detected a change in this round
            row = (*row, count(agent_state) > count(before))
        return (agent_state, s), row

    count = getattr(agent, "detection_count", None)
    horizon = world_spec.problem.horizon
    rounds = jnp.arange(horizon, dtype=jnp.int64)
    (state, _), rows = jax.lax.scan(round_, (state, world.first_state), rounds)
    names = COLUMNS if count is None else (*COLUMNS, "detected")
    return dict(zip(names, rows, strict=True)), agent.summary(state)


_COMPILED: dict[str, Any] = {}


def program(world_spec: Any, agent: JaxAgent, size: int, quiet: bool = False) -> Any:
    """The jitted batch function of a world and an agent for batches of ``size`` seeds, one
    per job and batch size: kept in this process for the last few jobs (a sweep's
    consecutive jobs reuse theirs) and on disk (:mod:`.cache`), announced when new (unless
    ``quiet``). From the first, this process no longer forks (:func:`forbid_forks`)."""
    forbid_forks("the JAX engine")
    key = f"{world_spec!r}|{agent!r}|{size}"
    if key not in _COMPILED:
        if len(_COMPILED) >= 8:
            _COMPILED.pop(next(iter(_COMPILED)))
        label = f"{agent.params.name} on {world_spec.params.name} ({size} seeds)"
        cache.announce(f"{key}|{jax.__version__}", label, quiet)
        _COMPILED[key] = jax.jit(jax.vmap(functools.partial(play, world_spec, agent)))
    return _COMPILED[key]


def run_compiled(world_spec: Any, agent: JaxAgent, seeds: np.ndarray) -> Any:
    """:func:`program` applied to ``seeds`` (device arrays)."""
    return program(world_spec, agent, len(seeds))(jnp.asarray(seeds))


def compile_program(world_spec: Any, agent: JaxAgent, size: int) -> None:
    """Compile :func:`program` into the cache without running it: ``nslb warmup``."""
    with jax.enable_x64(True):
        program(world_spec, agent, size, quiet=True).lower(jnp.zeros(size, jnp.int64)).compile()


def simulate_batch(world_spec: Any, agent: JaxAgent, seeds: np.ndarray, size: int) -> Trace:
    """The trace of ``seeds`` (at most ``size``), computed as a batch of ``size`` seeds."""
    seeds = np.asarray(seeds, dtype=np.int64)
    padded = np.concatenate([seeds, np.full(size - len(seeds), seeds[-1], dtype=np.int64)])
    with jax.enable_x64(True):
        columns, summary = run_compiled(world_spec, agent, padded)
        columns = {k: np.asarray(v)[: len(seeds)] for k, v in columns.items()}
        summary = {k: np.asarray(v, dtype=float)[: len(seeds)] for k, v in summary.items()}
    believes = type(agent).reports_belief
    R, n = columns["action"].shape
    if "detected" in columns:
        latent = columns["state"] if world_spec.problem.n_states > 1 else None
        summary |= AlarmLog.from_flags(columns["detected"]).summary(latent)
    return Trace(
        seeds=seeds,
        action=columns["action"].astype(np.int64),
        reward=columns["reward"],
        expected_reward=columns["expected_reward"],
        optimal_reward=columns["optimal_reward"],
        state=columns["state"].astype(np.int64),
        belief=columns["belief"].astype(np.int64) if believes else np.full((R, n), NO_BELIEF),
        p_true_state=columns["p_true"] if believes else np.full((R, n), np.nan),
        summary=summary,
    )
