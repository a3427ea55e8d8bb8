"""How much memory one batch of a job needs, estimated before anything is simulated
(docs/design.md §8): a lower bound of the peak, each term keyed by the config key it grows with."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable
from dataclasses import fields
from typing import TYPE_CHECKING, Any

import numpy as np

from nslb_cli.agents import AGENTS
from nslb_cli.bandit.problem import Sizes
from nslb_cli.common.errors import describe_error
from nslb_cli.common.stopping import stopped_by
from nslb_cli.envs import ENVIRONMENTS

if TYPE_CHECKING:
    from nslb_cli.runner.engines import Engine

RUN_KEYS = ("run.batch_size", "run.n_seeds")
"""The run settings a declaration may name (they size a job's memory)."""


class Malformed(ValueError):
    """A plugin's memory declaration raised or broke the contract; ``str(err)`` is one line
    naming the plugin and what is wrong."""


def _call(owner: str, what: str, function: Callable[..., Any], *args: Any) -> Any:
    """``function(*args)``, any exception of the plugin's code (a request to stop aside)
    turned into ``Malformed``."""
    try:
        return function(*args)
    except BaseException as err:
        if stopped_by(err) is not None:
            raise
        raise Malformed(f"{owner}: {what} raised {describe_error(err)}") from None


def config_keys(section: str, params: Any) -> set[str]:
    """``{"env.horizon", ...}``: the keys of a config section whose values are ``params``."""
    return {f"{section}.{field.name}" for field in fields(params)}


def sizes_of(env: Any, params: Any, runs: int) -> Sizes:
    """The sizes of a batch of ``runs`` runs of ``env`` with ``params``: its ``sizes(params, runs)``
    where it has one (``Malformed`` if that fails), else its horizon, arms and states."""
    declared = getattr(env, "sizes", None)
    if declared is None:
        return Sizes(runs, params.horizon, params.n_arms, params.n_states)
    owner = f"environment '{params.name}'"
    sizes = _call(owner, "sizes(params, n_runs)", declared, params, runs)
    if not isinstance(sizes, Sizes):
        returned = type(sizes).__name__
        raise Malformed(f"{owner}: sizes(params, n_runs) returned {returned}, not Sizes")
    if sizes.n_features and sizes.features_key not in config_keys("env", params):
        raise Malformed(
            f"{owner}: sizes(params, n_runs) names {sizes.features_key!r} as the key of the "
            f"contexts' dimension, not one of its config keys"
        )
    return sizes


def declared(
    owner: str, memory: Callable[[Any, Sizes], Any], params: Any, sizes: Sizes, keys: set[str]
) -> dict[str, int]:
    """``memory(params, sizes)`` checked against the contract: config keys among ``keys`` (or
    several, joined by ``", "``) to bytes (integers ``>= 0``); else ``Malformed``."""
    terms = _call(owner, "memory(params, sizes)", memory, params, sizes)
    if not isinstance(terms, dict):
        raise Malformed(
            f"{owner}: memory(params, sizes) returned {type(terms).__name__}, "
            "not a dict from config keys to bytes"
        )
    for key, value in terms.items():
        if not isinstance(key, str) or not set(key.split(", ")) <= keys:
            raise Malformed(
                f"{owner}: memory(params, sizes) names {key!r}, not a config key of its own, "
                f"of the environment or {' or '.join(RUN_KEYS)}"
            )
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 0:
            raise Malformed(
                f"{owner}: memory(params, sizes) gives {key} {value!r} bytes, not an integer >= 0"
            )
    return {key: int(value) for key, value in terms.items()}


def agent_memory(agent: Any, params: Any, env_params: Any, sizes: Sizes) -> dict[str, int]:
    """Agent class ``agent``'s declaration for ``sizes``, checked (``declared``): its keys
    may be its own, the environment's (``env_params``) or ``RUN_KEYS``."""
    keys = config_keys("agent", params) | config_keys("env", env_params) | set(RUN_KEYS)
    return declared(f"agent '{params.name}'", agent.memory, params, sizes, keys)


def env_memory(env: Any, params: Any, sizes: Sizes) -> dict[str, int]:
    """Environment class ``env``'s declaration ``memory(params, sizes)``, checked
    (``declared``: its keys may be its own or ``RUN_KEYS``); none without one."""
    memory = getattr(env, "memory", None)
    if memory is None:
        return {}
    keys = config_keys("env", params) | set(RUN_KEYS)
    return declared(f"environment '{params.name}'", memory, params, sizes, keys)


def batch_bytes(
    env_params: Any, agent_params: Any, batch: int, engine: Engine, every: int = 1
) -> dict[str, int]:
    """The estimated bytes of one batch of ``batch`` runs on ``engine`` keeping every ``every``-th
    round, by config key; ``Malformed`` if a declaration is."""
    env, agent = ENVIRONMENTS[env_params.name], AGENTS[agent_params.name]
    sizes = sizes_of(env, env_params, batch)
    statistics = agent_memory(agent, agent_params, env_params, sizes)
    terms = engine.batch_terms(env, agent, sizes, statistics, every)
    terms.append(env_memory(env, env_params, sizes))
    total: Counter[str] = Counter()
    for term in terms:
        total.update(term)  # terms keyed alike are added (zeros kept)
    return dict(total)


def physical_memory() -> int:
    """Bytes of physical memory of this machine."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


SEED_BYTES = 100
"""Bytes a job keeps for each of its seeds whatever the batch (the seed list, the set of
seeds done, their final values): a lower bound."""


def too_many_seeds(n_seeds: int) -> str | None:
    """``None`` if the bookkeeping of ``n_seeds`` seeds fits in memory, else a one-line
    reason naming ``run.n_seeds``."""
    needed, available = n_seeds * SEED_BYTES, physical_memory()
    if needed <= available:
        return None
    return (
        f"{n_seeds} seeds need at least {needed / 2**30:.3g} GiB for their bookkeeping alone "
        f"but this machine has {available / 2**30:.3g} GiB: lower run.n_seeds"
    )


def too_large(env: Any, agent: Any, batch: int, engine: Engine, every: int = 1) -> str | None:
    """``None`` if a batch on ``engine`` fits in memory, else a one-line reason: the key of the
    largest term to lower, or the plugin whose declaration is malformed."""
    try:
        terms = batch_bytes(env, agent, batch, engine, every)
    except Malformed as err:
        return str(err)
    total, available = sum(terms.values()), physical_memory()
    if total <= available:
        return None
    key = max(terms, key=terms.__getitem__)
    lower = key if key == "run.batch_size" else f"{key} or run.batch_size"
    return (
        f"a batch of {batch} seeds needs at least {total / 2**30:.3g} GiB ({key}: "
        f"{terms[key] / 2**30:.3g} GiB) but this machine has {available / 2**30:.3g} GiB: "
        f"lower {lower}"
    )
