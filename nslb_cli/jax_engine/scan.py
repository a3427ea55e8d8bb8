"""The JAX engine's simulation: for each seed a ``lax.scan`` over rounds in which the world
and the agent play (docs/design.md §9), ``vmap`` over the seeds of a batch, compiled once
per job and batch size.

The agent's keys are its stream (``Stream.AGENT``) split into an init key and a round key,
the round key folded with ``t`` and split for ``act`` and ``update``. A lane of the batch is a
seed and the values of the world's and the agent's traced parameters (``lane_values``);
a lane's numbers depend on its seed and values only.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import functools
import logging
from collections.abc import Callable, Iterator
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from nslb_cli.bandit.detections import AlarmLog
from nslb_cli.bandit.rng import Stream
from nslb_cli.bandit.trace import NO_BELIEF, BrokenContract, Trace, kept_rounds, violation
from nslb_cli.common.apart import forbid_forks
from nslb_cli.jax_engine import cache, sweep
from nslb_cli.jax_engine.contract import Decision, JaxAgent, Truth
from nslb_cli.jax_engine.worlds import stream

logging.getLogger("jax").setLevel(logging.WARNING)  # not "no TPU found" in every job's log
Array = Any
Values = dict[str, dict[str, Any]]  # "env" / "agent" -> a traced parameter's lane values
COLUMNS = ("action", "reward", "expected_reward", "optimal_reward", "state", "belief", "p_true",
           "cum_regret", "cum_reward")  # fmt: skip


def with_values(spec: Any, values: dict[str, Array]) -> Any:
    """``spec`` (a world or an agent) whose params hold ``values`` (its traced parameters) in
    place of those it was built with; what it derived when built is kept, not validated again."""
    if not values:
        return spec
    params = copy.copy(spec.params)
    for name, value in values.items():
        object.__setattr__(params, name, value)
    changed = copy.copy(spec)
    object.__setattr__(changed, "params", params)  # worlds and agents are frozen dataclasses
    return changed


def with_noise(agent: JaxAgent, world_spec: Any) -> JaxAgent:
    """``agent`` whose setting's problem holds the lane's reward noise ``sigma`` (a traced
    array) in place of the one it was built with, where the world draws Gaussian rewards
    (``noise_scale``) and the agent declares ``noise_traced``; else ``agent`` itself."""
    scale = getattr(world_spec, "noise_scale", lambda: None)()
    if scale is None or not getattr(type(agent), "noise_traced", False):
        return agent
    problem = copy.copy(agent.setting.problem)  # frozen, validated when built: not again
    reward_model = copy.copy(problem.reward_model)
    object.__setattr__(reward_model, "sigma", scale)
    object.__setattr__(problem, "sigma", scale)
    object.__setattr__(problem, "reward_model", reward_model)
    changed = copy.copy(agent)
    object.__setattr__(changed, "setting", dataclasses.replace(agent.setting, problem=problem))
    return changed


def traced_names(spec: Any) -> tuple[str, ...]:
    """The parameters that may differ between the lanes of one program: those of its
    ``traced`` that hold numbers (a ``None``, "computed", is part of the program)."""
    return sweep.numbers(spec.params, getattr(type(spec), "traced", ()))


def lane_values(world_spec: Any, agent: JaxAgent, lanes: int) -> Values:
    """The traced values of ``world_spec`` and ``agent``, one per lane: a job's lanes."""
    return {
        part: {n: np.full(lanes, getattr(spec.params, n)) for n in traced_names(spec)}
        for part, spec in (("env", world_spec), ("agent", agent))
    }


def play(
    world_spec: Any, agent: JaxAgent, every: int, seed: Array, values: Values
) -> tuple[dict[str, Array], dict[str, Array]]:
    """One lane's whole horizon: the seed's columns at the rounds ``run.every=every`` keeps
    (``kept_rounds``; every round's, ``(n,)``, when 1) and the agent's summary, the
    world's and the agent's traced parameters at ``values``. Thinned, a detector's columns
    come whole as well (``detected``, and ``path`` the latent states), for the alarms are
    scored against the whole path (docs/design.md §6)."""
    world_spec, agent = with_values(world_spec, values["env"]), with_values(agent, values["agent"])
    agent = with_noise(agent, world_spec)
    key = jax.random.key(seed, impl="threefry2x32")  # whatever JAX_DEFAULT_PRNG_IMPL says
    world = world_spec.draw(key)
    init_key, round_key = jax.random.split(stream(key, Stream.AGENT))
    state = agent.init(world.model, init_key)

    def round_(carry: tuple[Any, ...], t: Array) -> tuple[tuple[Any, ...], tuple[Array, ...]]:
        agent_state, previous, cum_regret, cum_reward = carry
        s = world_spec.state(world, previous, t)
        means = world.true_means[s]
        act_key, update_key = jax.random.split(jax.random.fold_in(round_key, t))
        truth = Truth(s, means) if agent.sees_truth else None
        acted, decision = agent.act(agent_state, t, act_key, truth)
        decision = checked_decision(decision, world_spec.problem.n_states)
        a = decision.action
        r = world_spec.reward(world, means[a], t)
        before = same_state(agent_state, acted, "act")
        agent_state = same_state(before, agent.update(before, t, a, r, update_key), "update")
        cum_regret = cum_regret + (means.max() - means[a])  # in order: numpy's cumsum
        cum_reward = cum_reward + r
        row: tuple[Array, ...] = (a, r, means[a], means.max(), s, decision.belief,
                                  decision.posterior[s], cum_regret, cum_reward)  # fmt: skip
        if count is not None:  # whether the agent detected a change in this round
            row = (*row, count(agent_state) > count(before))
        return (agent_state, s, cum_regret, cum_reward), row

    count = getattr(agent, "detection_count", None)
    if count is not None:
        count = functools.partial(checked_scalar, count, "detection_count")
    horizon = world_spec.problem.horizon
    rounds = jnp.arange(horizon, dtype=jnp.int64)
    zero = jnp.zeros((), jnp.float64)
    start: tuple[Any, ...] = (state, world.first_state, zero, zero)
    names = COLUMNS if count is None else (*COLUMNS, "detected")
    if every == 1:
        (state, *_), rows = jax.lax.scan(round_, start, rounds)
        return dict(zip(names, rows, strict=True)), checked_summary(agent.summary(state))
    whole = {"path": names.index("state"), "detected": len(COLUMNS)} if count is not None else {}
    problem, believes = world_spec.problem, type(agent).reports_belief
    watched = watch(round_, problem.n_arms, problem.n_states, believes)
    first = (jnp.asarray(-1, jnp.int64), jnp.asarray(0, jnp.int64), zero)
    ((state, *_), broken), rows, paths = thinned_scan(
        watched, (start, first), horizon, every, tuple(whole.values())
    )
    columns = dict(zip(names, rows, strict=True)) | dict(zip(whole, paths, strict=True))
    columns |= dict(zip(BROKEN, broken, strict=True))
    return columns, checked_summary(agent.summary(state))


BROKEN = ("broken_round", "broken_kind", "broken_value")
"""A thinned lane's first decision out of range (``watch``): its round (0-based; -1:
none), what (an index of ``VIOLATIONS``, plus one) and its
value."""


def watch(round_: Round, n_arms: int, n_states: int, believes: bool) -> Round:
    """``round_`` with its carry paired with the first decision out of range (the arm, the
    believed state, the probability of the true state: ``
    check_decisions``, which sees only the rounds a thinned run keeps)."""

    def step(carry: tuple[Any, ...], t: Array) -> tuple[tuple[Any, ...], tuple[Array, ...]]:
        inner, (at, kind, value) = carry
        inner, row = round_(inner, t)
        a, belief, p = row[0], row[5], row[6]
        found = jnp.where((a < 0) | (a >= n_arms), 1, 0)
        if believes:
            believed = belief != NO_BELIEF
            outside = believed & ((belief < 0) | (belief >= n_states))
            found = jnp.where((found == 0) & outside, 2, found)
            unlikely = believed & ~((p >= 0.0) & (p <= 1.0 + 1e-9))
            found = jnp.where((found == 0) & unlikely, 3, found)
        this = jnp.select([found == 1, found == 2], [a, belief], p).astype(jnp.float64)
        new = (at < 0) & (found > 0)
        watched = (jnp.where(new, t, at), jnp.where(new, found, kind), jnp.where(new, this, value))
        return (inner, watched), row

    return step


def checked_decision(decision: Decision, n_states: int) -> Decision:
    """``decision`` as the contract wants it (an integer arm and believed state, a
    posterior of one entry per latent state), checked as the program is traced; else
    ``BrokenContract``."""
    if not isinstance(decision, Decision):
        raise BrokenContract(f"act returns {type(decision).__name__} in place of a Decision")
    action, belief, posterior = (jnp.asarray(x) for x in decision)
    for name, value in (("action", action), ("belief", belief)):
        if value.shape != () or not jnp.issubdtype(value.dtype, jnp.integer):
            raise BrokenContract(
                f"act's {name} is {value.dtype} of shape {value.shape}; it must be one integer"
            )
    if posterior.shape != (n_states,):
        raise BrokenContract(
            f"act's posterior has shape {posterior.shape}; it must be ({n_states},), one "
            "probability per latent state"
        )
    return Decision(action, belief, posterior)


def same_state(before: Any, after: Any, step: str) -> Any:
    """``after``, the state ``step`` returns, if it has the structure, shapes and types of
    ``before`` (a scan's carry must keep them); else ``BrokenContract``."""
    structures: list[Any] = [jax.tree.structure(before), jax.tree.structure(after)]
    if structures[0] != structures[1]:
        raise BrokenContract(f"{step} returns a state of another structure than it was given")
    for old, new in zip(jax.tree.leaves(before), jax.tree.leaves(after), strict=True):
        old, new = jnp.asarray(old), jnp.asarray(new)
        if (old.shape, old.dtype) != (new.shape, new.dtype):
            raise BrokenContract(
                f"{step} turns a state entry of {old.dtype} {old.shape} into {new.dtype} "
                f"{new.shape}; it must keep each entry's type and shape"
            )
    return after


def checked_scalar(function: Callable[[Any], Array], name: str, state: Any) -> Array:
    """``function(state)``, one number; else ``BrokenContract``."""
    value = jnp.asarray(function(state))
    if value.shape != ():
        raise BrokenContract(f"{name} returns shape {value.shape}; it must be one number")
    return value


def _host_number(value: Array) -> np.ndarray:
    """A summary's values on the host as the numpy engine writes them: counts as int64, flags
    as booleans, anything else as float64."""
    value = np.asarray(value)
    kind = value.dtype.kind
    return value.astype(np.int64 if kind in "iu" else bool if kind == "b" else float)


def checked_summary(summary: Any) -> dict[str, Array]:
    """The agent's summary, one number per name; else ``BrokenContract``."""
    if not isinstance(summary, dict):
        raise BrokenContract(f"summary returns {type(summary).__name__}; it must be a dict")
    for name, value in summary.items():
        if jnp.shape(value) != ():
            raise BrokenContract(
                f"summary's {name!r} has shape {jnp.shape(value)}; it must be one number"
            )
    return summary


Round = Callable[[tuple[Any, ...], Array], tuple[tuple[Any, ...], tuple[Array, ...]]]


def thinned_scan(
    round_: Round, start: tuple[Any, ...], horizon: int, every: int, whole: tuple[int, ...]
) -> tuple[tuple[Any, ...], tuple[Array, ...], tuple[Array, ...]]:
    """``round_`` over ``horizon`` rounds from the carry ``start``, keeping the rows of the
    rounds that ``run.every=every`` keeps (``kept_rounds``) and, of the entries ``whole``,
    every round's: the last carry, the kept rows and the whole entries. The rounds play as in
    ``lax.scan(round_, …)``, so the kept rows are those of the whole run, bit for bit."""
    kept = kept_rounds(horizon, every)
    spans = jnp.asarray(np.stack([np.concatenate([[0], kept[:-1]]), kept], axis=1))  # [lo, hi)
    shapes = jax.eval_shape(lambda c: round_(c, jnp.zeros((), jnp.int64))[1], start)
    row = tuple(jnp.zeros(x.shape, x.dtype) for x in shapes)
    paths = tuple(jnp.zeros((horizon, *shapes[i].shape), shapes[i].dtype) for i in whole)

    def one(t: Array, carry: tuple[Any, ...]) -> tuple[Any, ...]:
        inner, _, paths = carry
        inner, new = round_(inner, t)
        new = tuple(jnp.asarray(x, dtype=r.dtype) for x, r in zip(new, row, strict=True))
        return inner, new, tuple(p.at[t].set(new[i]) for p, i in zip(paths, whole, strict=True))

    def span(carry: tuple[Any, ...], bounds: Array) -> tuple[tuple[Any, ...], tuple[Array, ...]]:
        carry = jax.lax.fori_loop(bounds[0], bounds[1], one, carry)
        return carry, carry[1]

    (inner, _, paths), rows = jax.lax.scan(span, (start, row, paths), spans)
    return inner, rows, paths


@contextlib.contextmanager
def pinned_numbers() -> Iterator[None]:
    """The JAX settings that decide a seed's numbers, pinned whatever the environment sets:
    64-bit numbers, threefry's partitionable bits (``JAX_THREEFRY_PARTITIONABLE``) and
    compiled code (``JAX_DISABLE_JIT``: each operation alone rounds otherwise). The key's
    generator is pinned where a seed's key is made (``play``)."""
    with jax.enable_x64(True), jax.threefry_partitionable(True), jax.disable_jit(False):
        yield


_COMPILED: dict[str, Any] = {}
NO_LIBRARY_FUSIONS = {"xla_cpu_experimental_ynn_fusion_type": ""}
"""XLA's CPU code hands some fused loops over large arrays (a batch of a few hundred lanes
and up) to a library (YNNPACK), whose exponentials and sums differ from XLA's own in the last
bit: a seed's numbers would depend on the size of its batch (docs/design.md §2)."""


@functools.cache
def compiler_options() -> dict[str, str]:
    """``NO_LIBRARY_FUSIONS`` where this jaxlib knows the option (a probe compiles a
    one-line program once), none where it does not: older jaxlibs have no such fusions."""
    try:
        jax.jit(lambda x: x + 1, compiler_options=NO_LIBRARY_FUSIONS).lower(1.0).compile()
    except (TypeError, RuntimeError):  # an older jax: no such argument, or no such option
        return {}
    return dict(NO_LIBRARY_FUSIONS)


def program(
    world_spec: Any, agent: JaxAgent, size: int, every: int = 1, quiet: bool = False
) -> Any:
    """The jitted batch function ``(seeds, values) -> (columns, summary)`` of a world and an
    agent for batches of ``size`` lanes, cached in this process and on disk (``.cache``),
    announced when new (unless ``quiet``); from the first, this process no longer forks."""
    forbid_forks("the JAX engine")
    key = f"{world_spec!r}|{agent!r}|{size}" + (f"|every={every}" if every > 1 else "")
    if key not in _COMPILED:
        if len(_COMPILED) >= 8:
            _COMPILED.pop(next(iter(_COMPILED)))
        label = f"{agent.params.name} on {world_spec.params.name} ({size} seeds)"
        cache.announce(f"{key}|{jax.__version__}", label, quiet)
        batch = jax.vmap(functools.partial(play, world_spec, agent, every))
        _COMPILED[key] = jax.jit(batch, compiler_options=compiler_options())
    return _COMPILED[key]


def run_compiled(
    world_spec: Any,
    agent: JaxAgent,
    seeds: np.ndarray,
    values: Values | None = None,
    every: int = 1,
) -> Any:
    """``program`` applied to ``seeds`` and their lanes' ``values`` (by default the
    world's and the agent's own) as device arrays."""
    if values is None:
        values = lane_values(world_spec, agent, len(seeds))
    lanes, traced = on_devices(seeds, values)
    result = program(world_spec, agent, len(seeds), every)(lanes, traced)
    cache.record()  # the entries its compilation wrote, to tell them damaged later
    return result


def on_devices(seeds: np.ndarray, values: Values) -> tuple[Any, Values]:
    """``seeds`` and their ``values`` as device arrays, split between the devices by lanes
    where there are several (a CPU's cores: ``nslb_cli.jax_engine``) and the lanes divide
    evenly; the program then runs each device's share in parallel."""
    devices = jax.devices()
    split = None
    if len(devices) > 1 and len(seeds) % len(devices) == 0:
        split = NamedSharding(Mesh(np.array(devices), ("lanes",)), PartitionSpec("lanes"))
    put = lambda array: jax.device_put(np.asarray(array), split)  # noqa: E731
    return put(seeds), jax.tree.map(put, values)


def batch_size_on_devices(size: int) -> int:
    """``size`` rounded up to lanes that the devices share evenly, at least two each: with
    one lane on a device, XLA drops the lanes' axis and orders some sums otherwise, and a
    seed's last bits would depend on the batch it is in."""
    count = len(jax.devices())
    return max(2, -(-size // count)) * count


def compile_program(world_spec: Any, agent: JaxAgent, size: int) -> None:
    """Compile ``program`` into the cache without running it: ``nslb warmup``."""
    with pinned_numbers():
        size = batch_size_on_devices(size)
        lanes, traced = on_devices(np.zeros(size, np.int64), lane_values(world_spec, agent, size))
        program(world_spec, agent, size, quiet=True).lower(lanes, traced).compile()


def simulate_batch(
    world_spec: Any,
    agent: JaxAgent,
    seeds: np.ndarray,
    size: int,
    values: Values | None = None,
    every: int = 1,
) -> Trace:
    """The trace of ``seeds`` (at most ``size`` lanes, each with its ``values``; by default
    their own), computed as a batch of ``size`` lanes padded with copies of the last; with
    ``every`` above 1 only the kept rounds leave the device (``thinned_scan``)."""
    seeds = np.asarray(seeds, dtype=np.int64)
    if values is None:
        values = lane_values(world_spec, agent, len(seeds))
    size = batch_size_on_devices(size)
    pad = lambda v: np.concatenate([v, np.repeat(v[-1:], size - len(v))])  # noqa: E731
    padded, filled = pad(seeds), jax.tree.map(pad, values)
    R, kept = len(seeds), kept_rounds(world_spec.problem.horizon, every)
    with pinned_numbers():
        columns, summary = run_compiled(world_spec, agent, padded, filled, every)
        summary = {k: _host_number(v)[:R] for k, v in summary.items()}
        # lanes dropped on the host: a slice on the device is a program of its own, which
        # every process compiles (0.3 s for mTS's columns on a CPU)
        path = columns.pop("path", columns["state"])  # every round's latent state
        if "detected" in columns:  # scored against the whole path (design §6)
            latent = np.asarray(path)[:R] if world_spec.problem.n_states > 1 else None
            summary |= AlarmLog.from_flags(np.asarray(columns.pop("detected"))[:R]).summary(latent)
        _check_watched(
            world_spec.problem, seeds, {k: columns.pop(k) for k in BROKEN if k in columns}
        )
        thinned = every > 1  # the cumulative columns are the CSV's only then
        host = {k: np.asarray(v)[:R] for k, v in columns.items() if thinned or k[:4] != "cum_"}
    return _trace(agent, seeds, host, summary, kept if thinned else None)


def _check_watched(problem: Any, seeds: np.ndarray, broken: dict[str, Any]) -> None:
    """Raise ``BrokenContract`` for the first of ``seeds`` whose lane found a decision
    out of range in a round its thinned run does not keep (``watch``)."""
    if not broken:
        return
    at, kind, value = (np.asarray(broken[k])[: len(seeds)] for k in BROKEN)
    if (at >= 0).any():
        lane = int(np.argmax(at >= 0))
        t, seed = int(at[lane]) + 1, int(seeds[lane])
        line = violation(int(kind[lane]) - 1, t, seed, float(value[lane]), problem.n_arms,
                         problem.n_states)  # fmt: skip
        raise BrokenContract(line)


def _trace(
    agent: JaxAgent,
    seeds: np.ndarray,
    host: dict[str, np.ndarray],
    summary: dict[str, np.ndarray],
    rounds: np.ndarray | None,
) -> Trace:
    """The ``Trace`` of the columns ``host`` (those of ``COLUMNS`` brought back)."""
    believes = type(agent).reports_belief
    shape = host["action"].shape
    return Trace(
        seeds=seeds,
        action=host["action"].astype(np.int64),
        reward=host["reward"],
        expected_reward=host["expected_reward"],
        optimal_reward=host["optimal_reward"],
        state=host["state"].astype(np.int64),
        belief=host["belief"].astype(np.int64) if believes else np.full(shape, NO_BELIEF),
        p_true_state=host["p_true"] if believes else np.full(shape, np.nan),
        summary=summary,
        rounds=rounds,
        cumulative={k: host[k] for k in ("cum_regret", "cum_reward") if k in host},
    )
