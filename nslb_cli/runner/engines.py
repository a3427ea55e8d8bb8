"""The engines of ``run.engine``, one object each (``Engine``): what simulates a job's
batches; the runner asks the object, never the name (docs/design.md §8, step 2)."""

from __future__ import annotations

import importlib.util
import tempfile
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from nslb_cli.agents import AGENTS
from nslb_cli.agents.base import Agent
from nslb_cli.bandit.problem import FLOAT, Sizes
from nslb_cli.bandit.trace import Trace, check_decisions
from nslb_cli.envs import ENVIRONMENTS
from nslb_cli.jax_engine import coverage
from nslb_cli.jax_engine.sweep import Fits, SharedBatches
from nslb_cli.runner.parts import plan_parts, simulate_parts

TRACE_ARRAYS = 10


def trace_bytes(sizes: Sizes) -> int:
    """The trace's term alone (the simulator's record of a batch)."""
    return sizes.n_runs * sizes.horizon * TRACE_ARRAYS * FLOAT


class Unwritable(Exception):
    """A cache ``nslb warmup`` cannot write (or JAX missing for ``--engine jax``), one line."""


Terms = list[dict[str, int]]  # bytes by the config key that makes each grow
SweepJob = tuple[Any, Any, tuple[int, int]]  # env params, agent params, (batch size, every)


class Engine(ABC):
    """What every engine answers, with the answers of an engine that has nothing to say
    (it runs everything, adds nothing to a result key, shares no batch between jobs)."""

    name = ""
    key: str | None = None
    """What the engine adds to the result key of its results (``None``: nothing, the keys of
    the default engine's results name no engine)."""
    shares_batches = False
    """Whether the jobs of a sweep on it that differ only in traced parameters share
    programs and batches, and are announced first (``sharing``)."""

    def refusal(self, env: Any, agent: Any) -> tuple[str, str] | None:
        """``(key, reason)`` when the engine cannot run ``agent`` on ``env`` (params)."""
        return None

    @abstractmethod
    def simulate(self, env: Any, agent: Any, seeds: np.ndarray, run: Any) -> Trace:
        """The checked trace of ``seeds`` (one batch) for params ``env`` and ``agent`` and
        run settings ``run`` (``run.threads``, ``run.batch_size``, ``run.every``, …)."""

    @abstractmethod
    def batch_terms(
        self, env: Any, agent: type[Agent], sizes: Sizes, statistics: dict[str, int], every: int
    ) -> Terms:
        """The bytes a batch of ``sizes`` keeps on this engine (every ``every``-th round kept)
        but the environment's declaration; ``statistics``: the agent's declaration."""

    def numbers(self) -> str | None:
        """What decides the engine's numbers besides the config and nslb's version, if anything."""
        return None

    def group_keys(self, jobs: Sequence[SweepJob]) -> list[str | None]:
        """The group of each of a sweep's ``jobs`` (``None``: alone)."""
        return [None] * len(jobs)

    def sharing(self, jobs: Sequence[SweepJob], fits: Fits) -> AbstractContextManager[None]:
        """While the block runs, the sweep's ``jobs`` (in their order) share what the engine shares,
        as many lanes a batch as ``fits`` (env, agent, lanes) allows."""
        return nullcontext()

    @abstractmethod
    def warm_cache(self, alone: bool) -> list[Path]:
        """The cache folders ``nslb warmup`` fills, checked writable now rather than after
        minutes of compiling (else ``Unwritable``); ``alone``: the only engine warmed."""


class NumpyEngine(Engine):
    """``run.engine=numpy``: the world's arrays are made whole, then played round by round."""

    name = "numpy"
    WORLD_ARRAYS = 3  # (R, n) each: the latent path, the noise, the optimal rewards

    def simulate(self, env: Any, agent: Any, seeds: np.ndarray, run: Any) -> Trace:
        world = ENVIRONMENTS[env.name].build(env, seeds)
        cls = AGENTS[agent.name]
        plan = plan_parts(cls, run.threads, len(seeds))
        trace = simulate_parts(world, cls, agent, plan, run.progress)
        check_decisions(trace, world.problem.n_arms, world.problem.n_states)
        return trace

    def batch_terms(
        self, env: Any, agent: type[Agent], sizes: Sizes, statistics: dict[str, int], every: int
    ) -> Terms:
        """Every arm's means ``R n K``, the latent path, the noise and the optimal rewards
        ``3 R n``, with contexts the items behind the arms ``R n K``; the whole trace."""
        R, n, K = sizes.n_runs, sizes.horizon, sizes.n_arms
        items = K if env.contextual else 0
        world = R * n * (K + items + self.WORLD_ARRAYS) * FLOAT
        return [{"env.horizon, env.n_arms": world, "env.horizon": trace_bytes(sizes)}, statistics]

    def warm_cache(self, alone: bool) -> list[Path]:
        from nslb_cli.compiled.jit import CACHE

        try:
            CACHE.mkdir(parents=True, exist_ok=True)
            tempfile.TemporaryFile(dir=CACHE).close()
        except OSError as err:
            why = err.strerror or err
            raise Unwritable(f"cannot write the compiled-code cache {CACHE} ({why}): set "
                             "NSLB_CACHE to a writable folder") from None  # fmt: skip
        return [CACHE]


class JaxEngine(Engine):
    """``run.engine=jax``: the world and the agent of a batch in one compiled program."""

    name = "jax"
    key = "jax"
    shares_batches = True
    COPIES = 2  # the state and the rows: as the program holds them, and a copy each

    def __init__(self) -> None:
        self._shared: SharedBatches | None = None  # the running sweep's (``sharing``)

    def refusal(self, env: Any, agent: Any) -> tuple[str, str] | None:
        return coverage.refusal(env, agent)

    def simulate(self, env: Any, agent: Any, seeds: np.ndarray, run: Any) -> Trace:
        from nslb_cli.jax_engine.engine import simulate_seeds

        return simulate_seeds(env, agent, seeds, run.batch_size, run.every, self._shared)

    def batch_terms(
        self, env: Any, agent: type[Agent], sizes: Sizes, statistics: dict[str, int], every: int
    ) -> Terms:
        """No world arrays; the trace of the ``ceil(n / every)`` kept rounds, a detector's
        latent path and alarms of every round ``9 R n``; all and the agent's statistics
        ``COPIES`` times."""
        R, n = sizes.n_runs, sizes.horizon
        trace = trace_bytes(replace(sizes, horizon=-(-n // every)))  # kept_rounds' count
        detects = agent.detection_counts is not Agent.detection_counts
        made = {"env.horizon": trace + (R * n * (FLOAT + 1) if detects else 0)}
        held = (made, statistics)
        return [{key: self.COPIES * value for key, value in term.items()} for term in held]

    def numbers(self) -> str:
        return coverage.numbers()

    def warm_cache(self, alone: bool) -> list[Path]:
        """None without JAX, which ``alone`` (``--engine jax``) makes one line."""
        if importlib.util.find_spec("jax") is None:
            if alone:
                raise Unwritable(f"nslb warmup --engine jax needs JAX: {coverage.EXTRA}")
            return []
        from nslb_cli.common.paths import user_cache
        from nslb_cli.jax_engine.cache import folder

        path = folder()
        if path is None:
            raise Unwritable(f"cannot write the JAX programs' cache {user_cache() / 'jax'}: "
                             "set NSLB_CACHE to a writable folder")  # fmt: skip
        return [path]

    def group_keys(self, jobs: Sequence[SweepJob]) -> list[str | None]:
        from nslb_cli.jax_engine.engine import group_keys

        return group_keys(jobs)

    @contextmanager
    def sharing(self, jobs: Sequence[SweepJob], fits: Fits) -> Iterator[None]:
        """The jobs' programs and batches (``nslb_cli.jax_engine.sweep``), planned when
        the block begins and dropped when it ends: a job run after it shares nothing."""
        from nslb_cli.jax_engine.engine import plan_sweep

        self._shared = plan_sweep(jobs, fits)
        try:
            yield
        finally:
            self._shared = None


ENGINES: dict[str, Engine] = {engine.name: engine for engine in (NumpyEngine(), JaxEngine())}
"""The engines by ``run.engine``."""
