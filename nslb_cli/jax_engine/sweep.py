"""A sweep over traced parameters as one program (docs/design.md §9).

Jobs of a sweep that differ only in the values of traced parameters form a group, built once
for the group's largest values. ``plan`` makes a ``SharedBatches`` for the sweep: a
job's batch is filled with the same seeds for the next jobs of its group, up to
``run.batch_size`` lanes, whose traces wait (one batch at most) until their jobs ask for them.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from nslb_cli.bandit.trace import Trace

Job = tuple[Any, Any]  # (env params, agent params)
Fits = Callable[[Any, Any, int], bool]  # (env params, agent params, lanes): fits in memory?


class Names(NamedTuple):
    """The traced parameters of a job's environment and of its agent."""

    env: tuple[str, ...]
    agent: tuple[str, ...]


Lookup = Callable[[str], type | None]  # a name's built-in world or agent class, if any


def traced(job: Job, worlds: Lookup, agents: Lookup) -> Names:
    """The traced parameters of the built-in world and agent of ``job`` that hold numbers
    (a ``None``, "computed", stays part of the program). The world's ``noise``, which the
    agent reads too, only with a built-in agent that declares ``noise_traced``."""
    env, params = job
    world, agent = worlds(env.name), agents(params.name)
    env_names = numbers(env, getattr(world, "traced", ()))
    if not getattr(agent, "noise_traced", False):
        env_names = tuple(n for n in env_names if n not in getattr(world, "noise", ()))
    return Names(env_names, numbers(params, getattr(agent, "traced", ())))


def numbers(params: Any, names: Sequence[str]) -> tuple[str, ...]:
    """Those of ``names`` whose value in ``params`` is a number."""
    number = lambda v: isinstance(v, int | float) and not isinstance(v, bool)  # noqa: E731
    return tuple(n for n in names if number(getattr(params, n, None)))


def group_key(job: Job, run: Any, names: Names) -> str:
    """What the jobs of a group share: the environment and the agent but for ``names``, and
    ``run``, the run settings a batch depends on (its size, the rounds kept)."""
    env, params = job
    world = {k: v for k, v in dataclasses.asdict(env).items() if k not in names.env}
    agent = {k: v for k, v in dataclasses.asdict(params).items() if k not in names.agent}
    return repr((type(env).__qualname__, world, type(params).__qualname__, agent, run))


def _values_key(job: Job, names: Names) -> str:
    return repr(tuple(getattr(part, n) for part, of in zip(job, names, strict=True) for n in of))


def group_keys(
    jobs: Sequence[tuple[Any, Any, Any]], worlds: Lookup, agents: Lookup
) -> list[str | None]:
    """Each job's group key, ``(env params, agent params, run settings)`` each (the settings
    as ``group_key`` takes them); ``None`` for a plugin's, never grouped."""
    keys: list[str | None] = []
    for env, params, run in jobs:
        built_in = worlds(env.name) is not None and agents(params.name) is not None
        grouped = built_in and dataclasses.is_dataclass(params)
        keys.append(group_key((env, params), run, traced((env, params), worlds, agents))
                    if grouped else None)  # fmt: skip
    return keys


def static_params(job: Job, group: list[Job], names: Names) -> Job:
    """``job``'s params with each of ``names`` at its largest value in ``group``: what the
    group's program is built from (its arrays sized for every job of the group)."""
    built = []
    for at, (part, of) in enumerate(zip(job, names, strict=True)):
        part = copy.copy(part)
        for name in of:
            object.__setattr__(part, name, max(getattr(j[at], name) for j in group))
        built.append(part)
    return built[0], built[1]


def lanes(jobs: list[Job], names: Names, seeds: np.ndarray) -> dict[str, dict[str, np.ndarray]]:
    """The traced values of each lane, the environment's and the agent's: every job's, once
    per seed, jobs one after another."""

    def per_job(at: int, name: str) -> np.ndarray:
        return np.repeat(np.asarray([getattr(job[at], name) for job in jobs]), len(seeds))

    return {"env": {n: per_job(0, n) for n in names.env},
            "agent": {n: per_job(1, n) for n in names.agent}}  # fmt: skip


@dataclass
class SharedBatches:
    """A planned sweep's groups and the lanes that wait for their jobs: what the jobs of
    one sweep share, for as long as the sweep runs (``plan``). Empty, it is a job's
    outside any sweep: its group is itself, and nothing waits."""

    groups: dict[str, list[Job]] = field(default_factory=dict)
    """Each group key's jobs, in the order they run."""
    fits: Fits | None = None
    """Whether a batch of so many lanes fits in memory."""
    in_a_row: bool = False
    """Whether each group's jobs run in a row (a group's turn ends when another's begins)."""
    waiting: dict[tuple[str, str, bytes], Trace] = field(default_factory=dict)
    """The traces that wait for their jobs, by (group key, traced values, seeds)."""

    def members(self, key: str, job: Job) -> list[Job]:
        """The jobs of ``job``'s group (itself alone outside the planned groups)."""
        return self.groups.get(key, [job])

    def jobs_per_batch(self, key: str, static: Job, group: list[Job], per: int, size: int) -> int:
        """How many jobs of ``group`` one batch holds, ``per`` seeds each: as many as ``size``
        lanes take, halved until the batch fits in memory; at least one, and only that while
        another group's lanes wait."""
        if any(waits != key for waits, _, _ in self.waiting):
            return 1
        most = min(len(group), max(size // per, 1))
        while most > 1 and self.fits is not None and not self.fits(*static, most * per):
            most //= 2
        return most

    def _around(self, key: str, job: Job, names: Names) -> tuple[list[Job], list[Job]]:
        """The jobs of ``job``'s group before it and after it (none outside a group)."""
        group, mine = self.members(key, job), _values_key(job, names)
        order = [_values_key(j, names) for j in group]
        if mine not in order:
            return [], []
        at = order.index(mine)
        return group[:at], group[at + 1 :]

    def take(self, key: str, job: Job, names: Names, seeds: np.ndarray) -> Trace | None:
        """The trace that waits for this job's ``seeds``, if any; what waited for earlier jobs
        (of its group, or of another whose turn is over) is dropped."""
        passed = {_values_key(j, names) for j in self._around(key, job, names)[0]}
        over = self.in_a_row  # other groups' turns are over
        stale = [
            k for k in self.waiting if (k[0] == key and k[1] in passed) or (over and k[0] != key)
        ]
        for entry in stale:
            del self.waiting[entry]
        return self.waiting.pop((key, _values_key(job, names), seeds.tobytes()), None)

    def companions(self, key: str, job: Job, names: Names, room: int) -> list[Job]:
        """Up to ``room`` jobs after this one in its group whose traces do not wait already."""
        ready = {k[1] for k in self.waiting if k[0] == key}
        later = self._around(key, job, names)[1]
        return [j for j in later if _values_key(j, names) not in ready][:room]

    def keep(
        self, key: str, jobs: list[Job], names: Names, seeds: np.ndarray, trace: Trace
    ) -> Trace:
        """Split ``trace`` (the lanes of ``lanes``) by job: the first job's is returned,
        the others wait for their jobs."""
        size = len(seeds)
        parts = [trace.runs(slice(i * size, (i + 1) * size)) for i in range(len(jobs))]
        for job, part in zip(jobs[1:], parts[1:], strict=True):
            self.waiting[(key, _values_key(job, names), seeds.tobytes())] = part
        return parts[0]


def plan(
    jobs: Sequence[tuple[Any, Any, Any]], worlds: Lookup, agents: Lookup, fits: Fits
) -> SharedBatches:
    """What a sweep's jobs (as ``group_keys`` takes them, in the order they will run)
    share, with ``fits`` telling whether a batch of lanes fits in memory. Where each
    group's jobs come in a row, a group's turn ends when another's begins."""
    groups: dict[str, list[Job]] = {}
    keys = group_keys(jobs, worlds, agents)
    for (env, params, _), key in zip(jobs, keys, strict=True):
        if key is not None:
            groups.setdefault(key, []).append((env, params))
    runs = [key for at, key in enumerate(keys) if key is not None and keys[at - 1 : at] != [key]]
    return SharedBatches(groups, fits, len(runs) == len(set(runs)))
