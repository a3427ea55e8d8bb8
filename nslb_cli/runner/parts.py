"""A batch of runs cut into parts that threads simulate at once.

Nothing about a seed depends on its batch (docs/design.md §2), so the parts' traces joined are
the batch's trace, byte for byte, whatever the number of threads.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from typing import Any

import numpy as np

from nslb_cli.agents.base import Agent
from nslb_cli.bandit.rng import BatchRNG
from nslb_cli.bandit.trace import Trace
from nslb_cli.bandit.world import World
from nslb_cli.common.cpus import usable_cpus
from nslb_cli.runner.simulate import Abandoned, build_agent, simulate

MIN_RUNS = 8
"""Fewest runs in a part: a smaller part spends its round mostly in Python, under the GIL."""


def plan_parts(agent: type[Agent], threads: int | None, runs: int) -> int:
    """How many parts, one thread each, to play ``runs`` runs of ``agent`` in: one unless it is
    concurrent, else ``threads`` (default: the usable CPUs); at least ``MIN_RUNS`` a part."""
    most = runs // MIN_RUNS
    if not agent.concurrent or most <= 1:
        return 1
    return min(usable_cpus() if threads is None else threads, most)


def simulate_parts(
    world: World, agent: type[Agent], params: Any, parts: int, progress: bool | None
) -> Trace:
    """Play ``agent`` with ``params`` in ``world``, its runs cut into ``parts`` parts; the parts'
    traces joined, in the order of the runs.

    A part that fails, or a request to stop, makes the others give up within a round; its error is
    raised once every thread has ended.
    """
    bounds = np.linspace(0, len(world.seeds), parts + 1).round().astype(int)
    waiting: queue.SimpleQueue[int] = queue.SimpleQueue()
    for i in range(parts):
        waiting.put(i)
    failed = threading.Event()
    ended: queue.SimpleQueue[None] = queue.SimpleQueue()  # one item per thread done taking
    traces: dict[int, Trace] = {}
    errors: list[BaseException] = []

    def play(i: int, shown: bool | None) -> Trace:
        part = world if parts == 1 else world.part(slice(bounds[i], bounds[i + 1]))
        player = build_agent(agent, params, part, BatchRNG(part.seeds))
        label = "rounds" if parts == 1 else f"rounds, part {i + 1} of {parts}"
        return simulate(part, player, shown, abandoned=failed.is_set, label=label)

    def take_parts(shown: bool | None) -> None:
        try:
            while not failed.is_set():
                try:
                    i = waiting.get_nowait()
                except queue.Empty:
                    return
                try:
                    traces[i] = play(i, shown)
                except BaseException as error:  # noqa: BLE001  (raised by the caller below)
                    failed.set()  # the other parts stop within a round
                    errors.append(error)
        finally:
            ended.put(None)

    started: list[threading.Thread] = []
    try:
        for _ in range(parts - 1):
            thread = threading.Thread(target=take_parts, args=(False,), name="nslb-part")
            started.append(thread)  # before start: a stop request inside start may follow it
            try:
                thread.start()
            except RuntimeError:  # "can't start new thread": the others play its part
                started.pop()
                break
        take_parts(progress)
        for _ in range(len(started) + 1):  # unlike Thread.join in Python 3.11, a stop request
            ended.get()  # that cuts this wait short leaves the threads to be joined below
    except BaseException:
        failed.set()  # a request to stop: no part starts, the playing ones stop in a round
        raise
    finally:
        for thread in started:
            with contextlib.suppress(RuntimeError):  # a start cut short by a stop request:
                thread.join()  # the thread, if it runs at all, finds ``failed`` and returns
    for error in errors:  # the error that failed the batch, not the parts it abandoned
        if not isinstance(error, Abandoned):
            raise error
    return Trace.joined([traces[i] for i in range(parts)])
