"""What the JAX engine covers, readable without JAX: the validation of a job that chooses
``run.engine=jax`` (one line naming what to change) imports this module only."""

from __future__ import annotations

import importlib.util
import os
import re
from importlib import metadata
from typing import Any

from nslb_cli.jax_engine.agents import JAX_AGENTS, problem

ENVIRONMENTS = ("synthetic", "piecewise")
"""The environments the JAX engine runs, by ``env.name``."""
EXTRA = "pip install -e '.[jax]' (on a CUDA machine, also the matching jax[cudaNN])"
MOST_DEVICES = 4096  # CPU devices: JAX starts a thread for each (100,000 hung, then aborted)
MOST_ROUNDS = 2**53  # a float64 count stops growing there (and 2^63 overflowed the loop)
REVISION = "JAX engine numbers"  # how ``numbers`` begins (a plugin's part may follow)
NUMBERS = 9  # 9: a prior world's true parameters drawn by jax.random (8: settings pinned)
"""The revision of the JAX engine's numbers: raised whenever a change of the engine changes a
seed's numbers, so that a folder never mixes seeds of two revisions (``numbers``)."""
DEVICES = "--xla_force_host_platform_device_count"
"""XLA's flag of how many CPU devices JAX has (``nslb_cli.jax_engine`` sets it unless set)."""


def refusal(env: Any, agent: Any) -> tuple[str, str] | None:
    """``(key, reason)`` when the JAX engine cannot run ``agent`` on ``env`` (params), or
    JAX is not installed; ``None`` when it can."""
    if importlib.util.find_spec("jax") is None:
        return "run.engine", f"jax needs JAX, an optional extra: {EXTRA}"
    counts = re.findall(f"{DEVICES}=(\\S*)", os.environ.get("XLA_FLAGS", ""))
    if counts and not (counts[-1].isdigit() and 0 < int(counts[-1]) <= MOST_DEVICES):
        return "run.engine", (
            f"the environment's XLA_FLAGS sets {DEVICES}={counts[-1]}, "
            f"but JAX starts with 1 to {MOST_DEVICES} CPU devices (a thread "
            "each): set such a count, or leave the flag out (one device "
            "per usable CPU)"
        )
    if env.name not in ENVIRONMENTS:
        return "env", (
            f"{env.name} runs on the numpy engine only (run.engine=jax covers env="
            f"{', '.join(ENVIRONMENTS)}): drop run.engine=jax"
        )
    if getattr(env, "model", None) == "learned":  # EM runs on the host, for numpy's truths
        return "env.model", "learned runs on the numpy engine only: drop run.engine=jax"
    if getattr(env, "horizon", 0) > MOST_ROUNDS:
        return "env.horizon", (
            f"the JAX engine counts rounds and pulls in float64, exact up to "
            f"2^53 = {MOST_ROUNDS}: lower env.horizon"
        )
    if agent.name not in JAX_AGENTS.declared():
        return "agent", (
            f"{agent.name} runs on the numpy engine only (run.engine=jax covers agent="
            f"{', '.join(JAX_AGENTS.declared())}): drop run.engine=jax"
        )
    if agent.name in JAX_AGENTS and not JAX_AGENTS.foreign(agent.name):
        return None  # nslb's own (a test loads each)
    broken = problem(agent.name)  # a plugin's, or a name two packages declare
    return None if broken is None else ("agent", broken)


def numbers() -> str:
    """What decides the JAX engine's numbers besides the config: its revision and the
    versions of JAX and of jaxlib, its compiler (JAX keeps its random streams the same
    between versions as a rule, not as a promise). A folder's provenance records it, and
    seeds are added only under the same."""
    version = metadata.version
    return f"{REVISION} {NUMBERS}, jax {version('jax')}, jaxlib {version('jaxlib')}"
