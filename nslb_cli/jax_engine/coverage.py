"""What the JAX engine covers, readable without JAX: the validation of a job that chooses
``run.engine=jax`` (one line naming what to change) imports this module only."""

from __future__ import annotations

import importlib.util
from typing import Any

AGENTS = ("mts", "umts", "sw_mucb", "cd_ucb", "cd_ts", "exp4s", "oracle", "random")
"""The agents the JAX engine runs, by ``agent.name``."""
ENVIRONMENTS = ("synthetic", "piecewise")
"""The environments the JAX engine runs, by ``env.name``."""
EXTRA = "pip install -e '.[jax]' (on a CUDA machine, also the matching jax[cudaNN])"


def refusal(env: Any, agent: Any) -> tuple[str, str] | None:
    """``(key, reason)`` when the JAX engine cannot run ``agent`` on ``env`` (params), or
    JAX is not installed; ``None`` when it can."""
    if importlib.util.find_spec("jax") is None:
        return "run.engine", f"jax needs JAX, an optional extra: {EXTRA}"
    if env.name not in ENVIRONMENTS:
        return "env", (f"{env.name} runs on the numpy engine only (run.engine=jax covers env="
                       f"{', '.join(ENVIRONMENTS)}): drop run.engine=jax")  # fmt: skip
    if agent.name not in AGENTS:
        return "agent", (f"{agent.name} runs on the numpy engine only (run.engine=jax covers "
                         f"agent={', '.join(AGENTS)}): drop run.engine=jax")  # fmt: skip
    return None
