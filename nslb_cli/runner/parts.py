"""A batch of runs cut into parts that threads simulate at once.

A batch can be cut anywhere: nothing about a seed depends on the batch it is in (its
world, its agent's streams and its arithmetic are its own, docs/design.md §2), so the parts'
traces joined are the whole batch's trace, byte for byte. For an agent whose rounds are
spent in compiled code that releases the GIL (``Agent.concurrent``: umTS), parts played in
threads use several cores. Each part plays its own rounds at its own pace, with no
synchronisation between parts: unlike a parallel loop inside each round's kernel, which
waits for its slowest thread twice a round and stalls whenever another process takes a
core, parts only share the machine.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from nslb_cli.agents.base import Agent
from nslb_cli.core.rng import BatchRNG
from nslb_cli.core.trace import Trace
from nslb_cli.core.world import World
from nslb_cli.runner.simulate import build_agent, simulate

MIN_RUNS = 8
"""Fewest runs in a part: a smaller part spends its round mostly in Python, under the GIL."""


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity: a cluster job's allocation)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def part_count(agent: type[Agent], threads: int | None, runs: int) -> int:
    """How many parts to cut ``runs`` runs of ``agent`` into: ``threads`` (``None``: the
    usable CPUs) for a concurrent agent, at least :data:`MIN_RUNS` runs each; else one."""
    if not agent.concurrent:
        return 1
    wanted = usable_cpus() if threads is None else threads
    return max(1, min(wanted, runs // MIN_RUNS))


def simulate_parts(
    world: World, agent: type[Agent], params: Any, parts: int, progress: bool | None
) -> Trace:
    """Play an agent of class ``agent`` with ``params`` in ``world``, its runs cut into
    ``parts`` parts of nearly equal size played in as many threads (the first one shows the
    progress bar); the parts' traces joined, in the order of the runs."""
    bounds = np.linspace(0, len(world.seeds), parts + 1).round().astype(int)

    def play(i: int) -> Trace:
        part = world if parts == 1 else world.part(slice(bounds[i], bounds[i + 1]))
        player = build_agent(agent, params, part, BatchRNG(part.seeds))
        return simulate(part, player, progress=progress if i == 0 else False)

    if parts == 1:
        return play(0)
    with ThreadPoolExecutor(parts, thread_name_prefix="nslb-part") as pool:
        return Trace.joined(list(pool.map(play, range(parts))))
