"""How much memory one batch of a job needs, estimated before anything is simulated.

The large arrays of a batch of ``R = min(run.batch_size, run.n_seeds)`` runs, in bytes
(8 per float or index), with ``n`` rounds, ``K`` arms, ``S`` states, ``d`` features
(``env.rank``; 0 without context) and ``N`` particles (``agent.num_particles``; 1 for
agents without particles):

* world: mean rewards of every arm ``R n K``, plus path, noise and (contexts) items;
* trace: about ten ``R n`` arrays (the simulator's record and the CSV columns);
* agent: ``R N S (2K + S)`` for per-arm particle statistics and transition counts, or
  ``R N S (d^2 + d)`` for Bayesian linear regression per particle and state;
* window: ``2 R tau max(K, d + 1)`` for agents that keep their last ``tau`` observations
  (``agent.tau``: the change detectors, the sliding windows; a window left to the agent's
  default, ``null``, counts as ``n``, the longest such a default can be).

The estimate is a lower bound of the peak (temporaries come on top); a job whose batch
cannot fit in the machine's memory is refused with the key to lower.
"""

from __future__ import annotations

import os
from typing import Any

FLOAT = 8
TRACE_ARRAYS = 10


def batch_bytes(env: Any, agent: Any, batch: int) -> dict[str, int]:
    """The estimated bytes of one batch, by part (``world``, ``trace``, ``agent``)."""
    n, K, S = env.horizon, env.n_arms, env.n_states
    d = getattr(env, "rank", 0)
    N = getattr(agent, "num_particles", 1)
    world = batch * n * (K + (K if d else 0) + 3) * FLOAT
    trace = batch * n * TRACE_ARRAYS * FLOAT
    per_particle = S * (d * d + d) if d else S * (2 * K + S)
    tau = getattr(agent, "tau", 0)
    window = 2 * batch * (n if tau is None else tau) * max(K, d + 1) * FLOAT
    agent_bytes = batch * N * per_particle * FLOAT
    return {"world": world, "trace": trace, "agent": agent_bytes, "window": window}


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


def too_large(env: Any, agent: Any, batch: int) -> str | None:
    """``None`` if a batch fits in memory, else a one-line reason naming the key to lower."""
    parts = batch_bytes(env, agent, batch)
    total, available = sum(parts.values()), physical_memory()
    if total <= available:
        return None
    largest = max(parts, key=parts.__getitem__)
    sizes = [
        key
        for key, grows in (
            ("agent.num_particles", hasattr(agent, "num_particles")),
            ("env.rank", bool(getattr(env, "rank", 0))),
        )
        if grows
    ] or ["env.n_states", "env.n_arms"]
    keys = {
        "agent": f"{', '.join(sizes)} or run.batch_size",
        "window": "agent.tau or run.batch_size",
        "world": "env.horizon, env.n_arms or run.batch_size",
        "trace": "env.horizon or run.batch_size",
    }[largest]
    return (
        f"a batch of {batch} seeds needs at least {total / 2**30:.3g} GiB ({largest}: "
        f"{parts[largest] / 2**30:.3g} GiB) but this machine has {available / 2**30:.3g} GiB: "
        f"lower {keys}"
    )
