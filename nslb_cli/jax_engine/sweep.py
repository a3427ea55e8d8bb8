"""A sweep over traced parameters as one program (docs/design.md §9).

A JAX agent names the parameters it reads as traced arrays (``traced``: CD-UCB's window,
threshold and exploration rate, say): jobs of a sweep that differ only in their values
form a group, built once for the group's largest values (a ring as wide as the largest
window), so one compiled program serves every job of the group.

nslb's launcher announces a sweep's jobs (:func:`plan`) before it runs them one after
another. When a job of a group simulates a batch of seeds, the batch's lanes are filled
with the same seeds for the next jobs of the group, up to ``run.batch_size`` lanes, and
their traces wait here until their jobs ask for them (one batch at most: a job's turn
drops what waited for the jobs before it). A job whose seeds are not those waiting (its
folder held some already) simulates its own. Either way a lane's numbers are those of its
seed and values alone, and each job writes its own folder as it always does.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from nslb_cli.bandit.trace import Trace

_groups: dict[str, list[Any]] = {}  # group key -> the agent params of its jobs, in order
_waiting: dict[tuple[str, str, bytes], Trace] = {}  # (group, values, seeds) -> a job's trace
Fits = Callable[[Any, Any, int], bool]  # (env params, agent params, lanes): fits in memory?
_fits: list[Fits] = []  # the planned sweep's memory check


def traced(params: Any, agents: dict[str, type]) -> tuple[str, ...]:
    """The traced parameters of the built-in agent ``params`` that hold numbers (a ``None``,
    "computed", stays part of the program)."""
    names = getattr(agents.get(params.name), "traced", ())
    return tuple(n for n in names if _number(getattr(params, n, None)))


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def group_key(env: Any, params: Any, run: Any, names: Sequence[str]) -> str:
    """What the jobs of a group share: the environment, the agent but for ``names``, and
    ``run``, the run settings a batch depends on (its size, the rounds kept)."""
    agent = {k: v for k, v in dataclasses.asdict(params).items() if k not in names}
    world = (type(env).__qualname__, dataclasses.asdict(env))
    return repr((world, type(params).__qualname__, agent, run))


def _values_key(params: Any, names: Sequence[str]) -> str:
    return repr(tuple(getattr(params, n) for n in names))


def plan(jobs: Sequence[tuple[Any, Any, Any]], agents: dict[str, type], fits: Fits) -> None:
    """Announce a sweep's jobs, ``(env params, agent params, run settings)`` each (the
    settings as :func:`group_key` takes them), in the order they will run, and how to tell
    whether a batch of lanes fits in memory; forget the previous sweep's."""
    _groups.clear()
    _waiting.clear()
    _fits[:] = [fits]
    for env, params, run in jobs:
        if agents.get(params.name) is not None and dataclasses.is_dataclass(params):
            key = group_key(env, params, run, traced(params, agents))
            _groups.setdefault(key, []).append(params)


def members(key: str, params: Any) -> list[Any]:
    """The agent params of ``params``' group (itself alone outside a planned sweep)."""
    return _groups.get(key, [params])


def static_params(params: Any, group: list[Any], names: Sequence[str]) -> Any:
    """``params`` with each of ``names`` at its largest value in ``group``: what the group's
    program is built from (its arrays sized for every job of the group)."""
    built = copy.copy(params)
    for name in names:
        setattr(built, name, max(getattr(p, name) for p in group))
    return built


def jobs_per_batch(
    key: str, env: Any, static: Any, group: list[Any], per: int, batch_size: int
) -> int:
    """How many jobs of ``group`` (key ``key``) one batch holds, ``per`` seeds each: as
    many as ``batch_size`` lanes take, halved until a batch (every lane as wide as
    ``static``'s) fits in memory; at least one (the job's own seeds, checked before it
    ran), and only that while another group's lanes wait (what waits stays one batch)."""
    if any(waits != key for waits, _, _ in _waiting):
        return 1
    most = min(len(group), max(batch_size // per, 1))
    while most > 1 and _fits and not _fits[0](env, static, most * per):
        most //= 2
    return most


def _around(key: str, params: Any, names: Sequence[str]) -> tuple[list[Any], list[Any]]:
    """The jobs of ``params``' group before it and after it (none outside a planned group)."""
    group, mine = members(key, params), _values_key(params, names)
    order = [_values_key(p, names) for p in group]
    if mine not in order:
        return [], []
    at = order.index(mine)
    return group[:at], group[at + 1 :]


def waiting(key: str, params: Any, names: Sequence[str], seeds: np.ndarray) -> Trace | None:
    """The trace that waits for this job's ``seeds``, if any; what waited for the jobs
    before it in its group is dropped."""
    passed = {_values_key(p, names) for p in _around(key, params, names)[0]}
    for stale in [k for k in _waiting if k[0] == key and k[1] in passed]:
        del _waiting[stale]
    return _waiting.pop((key, _values_key(params, names), seeds.tobytes()), None)


def companions(key: str, params: Any, names: Sequence[str], room: int) -> list[Any]:
    """Up to ``room`` jobs after this one in its group whose traces do not wait already."""
    ready = {k[1] for k in _waiting if k[0] == key}
    later = _around(key, params, names)[1]
    return [p for p in later if _values_key(p, names) not in ready][:room]


def lanes(jobs: list[Any], names: Sequence[str], seeds: np.ndarray) -> dict[str, np.ndarray]:
    """The traced values of each lane: every job's, once per seed, jobs one after another."""
    return {n: np.repeat(np.asarray([getattr(p, n) for p in jobs]), len(seeds)) for n in names}


def keep(key: str, jobs: list[Any], names: Sequence[str], seeds: np.ndarray, trace: Trace) -> Trace:
    """Split ``trace`` (the lanes of :func:`lanes`) by job: the first job's is returned, the
    others wait for their jobs."""
    parts = [trace.runs(slice(i * len(seeds), (i + 1) * len(seeds))) for i in range(len(jobs))]
    for params, part in zip(jobs[1:], parts[1:], strict=True):
        _waiting[(key, _values_key(params, names), seeds.tobytes())] = part
    return parts[0]
