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

import contextlib
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from nslb_cli.agents.base import Agent
from nslb_cli.core.rng import BatchRNG
from nslb_cli.core.trace import Trace
from nslb_cli.core.world import World
from nslb_cli.runner.simulate import Abandoned, build_agent, simulate

MIN_RUNS = 8
"""Fewest runs in a part: a smaller part spends its round mostly in Python, under the GIL."""
LOOK = 0.05
"""Seconds over which the CPUs' use is measured before a batch is cut (:func:`idle_cpus`)."""
LOOK_KEPT = 2.0
"""Seconds for which a look at the CPUs stands for the batches that follow."""
GROW_EVERY = 0.25
"""Seconds between looks for an idle CPU while a batch's parts wait (:func:`simulate_parts`)."""
PARTS_PER_CPU = 4
"""Parts per usable CPU of a batch started on fewer CPUs than it may use (:func:`plan_parts`)."""
_last_look: tuple[float, int] | None = None  # (time.monotonic() of the look, idle CPUs)


@dataclass(frozen=True)
class _Snapshot:
    """The CPUs' clock ticks (:func:`_cpu_times`) and this process's CPU seconds, at ``at``."""

    at: float
    ticks: tuple[int, int] | None
    own: float


_started: _Snapshot | None = None  # where the command's first look begins (start_look)


def usable_cpus() -> set[int]:
    """The CPUs this process may run on (its affinity: a cluster job's allocation)."""
    try:
        return os.sched_getaffinity(0)
    except AttributeError:  # not Linux
        return set(range(os.cpu_count() or 1))


CGROUP = Path("/sys/fs/cgroup")
"""Where Linux shows the process's control group (a container's CPU quota)."""


def cpu_quota() -> float | None:
    """The CPUs' worth of time a container's quota grants this process (cgroup v2
    ``cpu.max``, or v1 ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us``), ``None`` without one.
    A quota is not an affinity: the process may run on every CPU but only this long in all."""
    try:
        quota, period = (CGROUP / "cpu.max").read_text().split()[:2]
    except (OSError, ValueError):
        try:
            quota = (CGROUP / "cpu" / "cpu.cfs_quota_us").read_text().strip()
            period = (CGROUP / "cpu" / "cpu.cfs_period_us").read_text().strip()
        except OSError:
            return None
    if quota in ("max", "-1"):
        return None
    try:
        return int(quota) / int(period)
    except (ValueError, ZeroDivisionError):
        return None


def _cpu_times(cpus: set[int]) -> tuple[int, int] | None:
    """``(busy, total)`` clock ticks of ``cpus`` since boot, from ``/proc/stat`` (Linux);
    ``None`` where it cannot be read."""
    try:
        lines = Path("/proc/stat").read_text().splitlines()
    except OSError:
        return None
    busy = total = 0
    for line in lines:
        name, *fields = line.split()
        if name.startswith("cpu") and name[3:].isdigit() and int(name[3:]) in cpus:
            ticks = [int(x) for x in fields[:8]]
            idle = ticks[3] + ticks[4]  # idle and iowait
            busy, total = busy + sum(ticks) - idle, total + sum(ticks)
    return (busy, total) if total else None


def idle_cpus() -> int:
    """How many of the usable CPUs were idle over the last :data:`LOOK` seconds (all of them
    where the use cannot be measured); a look taken less than :data:`LOOK_KEPT` seconds ago
    is reused, so that many small batches do not each wait for one."""
    global _last_look
    now = time.monotonic()
    if _last_look is not None and now - _last_look[0] < LOOK_KEPT:
        return _last_look[1]
    idle = _look()
    _last_look = (time.monotonic(), idle)
    return idle


def start_look() -> None:
    """Begin the first look at the CPUs now, at the command's start: a batch that starts
    :data:`LOOK` to :data:`LOOK_KEPT` seconds later measures the CPUs' use since then, this
    process's own left out as always, instead of waiting :data:`LOOK` seconds."""
    global _started
    _started = _snapshot(usable_cpus())


def _snapshot(cpus: set[int]) -> _Snapshot:
    return _Snapshot(time.monotonic(), _cpu_times(cpus), _own_cpu())


def _look() -> int:
    """:func:`idle_cpus`, measured now: the usable CPUs' busy share over the last
    :data:`LOOK` seconds (or since :func:`start_look`), less this process's own (its own
    work, and threads of its libraries that spin a moment after their work, numpy's BLAS
    say, are not another process)."""
    global _started
    cpus = usable_cpus()
    before, _started = _started, None
    if before is None or not LOOK <= time.monotonic() - before.at <= LOOK_KEPT:
        before = _snapshot(cpus)
        time.sleep(LOOK)
    return _idle(cpus, before, _snapshot(cpus))


def _idle(cpus: set[int], before: _Snapshot, after: _Snapshot) -> int:
    """The CPUs of ``cpus`` that other processes left idle between two snapshots, at most a
    container's quota; all of them where the use cannot be measured."""
    if before.ticks is None or after.ticks is None or after.ticks[1] == before.ticks[1]:
        return len(cpus)
    busy = len(cpus) * (after.ticks[0] - before.ticks[0]) / (after.ticks[1] - before.ticks[1])
    others = busy - (after.own - before.own) / max(after.at - before.at, LOOK)
    idle = max(0, len(cpus) - round(max(0.0, others)))
    quota = cpu_quota()
    return idle if quota is None else min(idle, max(1, int(quota)))


def _own_cpu() -> float:
    """CPU seconds this process has used, all its threads together."""
    times = os.times()
    return times.user + times.system


def part_count(agent: type[Agent], threads: int | None, runs: int) -> int:
    """How many threads to play ``runs`` runs of ``agent`` in at first: one unless the agent
    is concurrent; then ``threads``, or by default one per idle CPU (at least one); never
    fewer than :data:`MIN_RUNS` runs a thread.

    The default takes only idle CPUs because a part that must share its CPU with another
    process stalls its sibling parts: each round a part takes Python's GIL for a moment, and
    a thread descheduled while holding it makes the others wait a whole time slice
    (measured: three umTS processes with two parts each on two CPUs took 10 s where one part
    each took 3 s).
    """
    most = runs // MIN_RUNS
    if not agent.concurrent or most <= 1:
        return 1
    wanted = max(1, idle_cpus()) if threads is None else threads
    return min(wanted, most)


@dataclass(frozen=True)
class Plan:
    """How a batch is played: cut into ``parts`` parts that ``threads`` threads take one after
    another, joined by more threads, up to ``most_threads``, as CPUs fall idle."""

    parts: int
    threads: int
    most_threads: int

    @classmethod
    def even(cls, parts: int) -> Plan:
        """``parts`` parts, one thread each."""
        return cls(parts, parts, parts)


def cpu_limit() -> int:
    """The CPUs this process may use at once: its affinity, within a container's quota."""
    quota = cpu_quota()
    cpus = len(usable_cpus())
    return cpus if quota is None else max(1, min(cpus, int(quota)))


def plan_parts(agent: type[Agent], threads: int | None, runs: int) -> Plan:
    """How to play ``runs`` runs of ``agent``: as many parts as threads
    (:func:`part_count`), unless the default finds fewer idle CPUs than the process may
    use. Then the batch is cut into :data:`PARTS_PER_CPU` parts per usable CPU (at least
    :data:`MIN_RUNS` runs each) that the idle CPUs' threads take one after another, and a
    thread is added whenever another CPU falls idle (:func:`simulate_parts`): a batch that
    starts beside other work finishes on every CPU that work leaves (``make paper``'s last
    umTS job used to play alone on one CPU of two for 1.7 s)."""
    count = part_count(agent, threads, runs)
    most = min(runs // MIN_RUNS, cpu_limit())
    if not agent.concurrent or threads is not None or count >= most:
        return Plan.even(count)
    return Plan(min(runs // MIN_RUNS, PARTS_PER_CPU * most), count, most)


def simulate_parts(
    world: World, agent: type[Agent], params: Any, plan: Plan, progress: bool | None
) -> Trace:
    """Play an agent of class ``agent`` with ``params`` in ``world``, its runs cut into the
    plan's parts of nearly equal size, played by the plan's threads (the first thread shows
    the progress of each part it plays); the parts' traces joined, in the order of the
    runs. While parts wait, a look every :data:`GROW_EVERY` seconds adds a thread if a CPU
    is idle beyond those this process uses, and retires one (when it ends its part) if
    other processes took CPUs its threads used: two processes that grew into one idle CPU
    at once would stall each other's threads on the GIL. A part that fails makes the
    others give up within a round, and its error is raised. Threads the system refuses to
    start are done without: the parts are played by the threads it gave, or by the caller's."""
    bounds = np.linspace(0, len(world.seeds), plan.parts + 1).round().astype(int)
    failed = threading.Event()

    def play(i: int, shown: bool | None) -> Trace:
        part = world if plan.parts == 1 else world.part(slice(bounds[i], bounds[i + 1]))
        try:
            player = build_agent(agent, params, part, BatchRNG(part.seeds))
            label = "rounds" if plan.parts == 1 else f"rounds, part {i + 1} of {plan.parts}"
            return simulate(part, player, shown, abandoned=failed.is_set, label=label)
        except Exception:
            failed.set()  # the other parts stop within a round
            raise

    if plan.parts == 1:
        return play(0, progress)
    waiting = list(range(plan.parts))[::-1]
    traces: dict[int, Trace] = {}
    errors: list[BaseException] = []
    lock, ended, crowded = threading.Lock(), threading.Event(), threading.Event()
    playing = 0  # players that have not left, counted under ``lock``

    def take_parts(first: bool) -> None:
        """Play waiting parts until none is left; a player other than the first (it shows
        the progress) leaves early when ``crowded``, unless it is the last one playing."""
        nonlocal playing
        shown = progress if first else False
        try:
            while True:
                with lock:
                    retire = crowded.is_set() and not first and playing > 1
                    if failed.is_set() or not waiting or retire:
                        if retire:
                            crowded.clear()  # one player fewer: another process took a CPU
                        playing -= 1  # in the same hold: the next look counts one fewer
                        return
                    i = waiting.pop()
                traces[i] = play(i, shown)
        except BaseException as error:  # noqa: BLE001  (raised by the caller below)
            with lock:
                playing -= 1
            failed.set()
            errors.append(error)
        finally:
            ended.set()

    players: list[threading.Thread] = []

    def add_player() -> bool:
        """Start one more player; ``False`` if the system refuses a thread (a limit on
        processes or memory): the players started go on with every part."""
        nonlocal playing
        player = threading.Thread(target=take_parts, args=(not players,), name="nslb-part")
        with lock:
            playing += 1
        players.append(player)  # before start: a stop request inside start may follow it
        try:
            player.start()
        except RuntimeError:  # "can't start new thread"
            players.pop()
            with lock:
                playing -= 1
            return False
        return True

    try:
        refused = False
        while len(players) < plan.threads and not refused:
            refused = not add_player()
        if not players:  # not one thread to be had: this one plays every part
            playing = 1
            take_parts(True)
        watch = _IdleWatch() if plan.most_threads > len(players) and not refused else None
        while any(player.is_alive() for player in players):
            ended.wait(GROW_EVERY)
            ended.clear()
            if watch is None or not waiting:
                continue
            with lock:
                now_playing = playing
            spare = watch.spare(now_playing)
            if spare is None:
                continue
            with lock:  # a look counted against players since retired says nothing
                if spare < 0 and playing == now_playing > 1:
                    crowded.set()
                elif spare >= 0:
                    crowded.clear()  # the CPUs are no longer crowded: no one retires
            if spare > 0 and now_playing < plan.most_threads and not add_player():
                watch = None  # refused a thread: the batch ends on the players it has
    except BaseException:
        failed.set()  # a request to stop: no part starts, the playing ones stop in a round
        raise
    finally:
        for player in players:
            with contextlib.suppress(RuntimeError):  # a start cut short by a stop request:
                player.join()  # the thread, if it runs at all, finds ``failed`` and returns
    for error in errors:  # the error that failed the batch, not the parts it abandoned
        if not isinstance(error, Abandoned):
            raise error
    return Trace.joined([traces[i] for i in range(plan.parts)])


class _IdleWatch:
    """Looks, one span after another, for a CPU that other processes and this batch's
    players leave idle (:func:`_idle` on each span)."""

    def __init__(self) -> None:
        self._cpus = usable_cpus()
        self._before = _snapshot(self._cpus)

    def spare(self, playing: int) -> int | None:
        """How many CPUs were idle since the last look besides the ``playing`` threads'
        (fewer than none: other processes took CPUs the players used); ``None`` for a span
        shorter than :data:`LOOK`, measured on with the next look. The look stands for
        :func:`idle_cpus` too: the next batch starts from what this one saw last."""
        global _last_look
        now = _snapshot(self._cpus)
        if now.at - self._before.at < LOOK:
            return None
        before, self._before = self._before, now
        idle = _idle(self._cpus, before, now)
        _last_look = (now.at, idle)
        return idle - playing
