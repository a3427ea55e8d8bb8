"""``nslb warmup``: compile every agent's kernels in advance, so no real run waits for them.

numba compiles a kernel for the argument types of its first call and caches it on disk
(``nslb_cli.compiled.jit``); the types depend on the reward model and on whether the
model is known or a prior, not on the sizes. Each agent therefore plays a few rounds of
two seeds in each of ``SETTINGS``, and on ``MOVIELENS`` (a small ratings file of its
own, ``write_ratings``, so no release is needed).
"""

from __future__ import annotations

import importlib.util
import os
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import replace
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import numpy as np

from nslb_cli.agents import AGENTS
from nslb_cli.bandit import finite
from nslb_cli.common.errors import ConfigError
from nslb_cli.compiled.jit import CACHE, cache_kept, compile_quietly
from nslb_cli.envs import ENVIRONMENTS
from nslb_cli.runner.config import RunConfig, RunSettings, pairing_refusal
from nslb_cli.runner.engines import Engine, JaxEngine

SETTINGS = tuple(
    {"model": model, "reward": reward, "horizon": 12, "n_arms": 3, "n_states": 2}
    for model in ("known", "prior")
    for reward in ("gaussian", "bernoulli")
)
"""The synthetic worlds every agent plays (one per argument-type family)."""


MOVIELENS = {
    "min_user_ratings": 20,
    "min_item_ratings": 30,
    "rank": 3,
    "n_states": 3,
    "n_arms": 6,
    "horizon": 12,
}
"""The MovieLens world of the warm-up, on ``write_ratings``'s file."""
FAMILIES = ("switching_latent", "latent_ar")  # the successors' worlds, 12 rounds each


def write_ratings(folder: Path) -> Path:
    """``folder/ratings.csv``: 60 users of three tastes rating about 70 % of 40 movies from 1
    to 5 (``r = round(3 + u · v)``), enough for every step of MovieLens's preparation."""
    rng = np.random.default_rng(0)
    taste = rng.normal(0, 1, (60, 3)) + 4 * np.eye(3)[np.arange(60) % 3]
    scores = taste @ rng.normal(0, 0.5, (40, 3)).T
    users, movies = np.nonzero(rng.random(scores.shape) < 0.7)
    ratings = np.clip(np.round(3 + scores[users, movies]), 1, 5)
    rows = (f"{u},{m},{r:g}" for u, m, r in zip(users, movies, ratings, strict=True))
    (folder / "ratings.csv").write_text("user,item,rating\n" + "\n".join(rows) + "\n")
    return folder


def warm_up(report: Callable[[str], None], names: Iterable[str] | None = None) -> tuple[int, bool]:
    """Run every agent (or those of ``names``) on every setting, in parallel processes (one per
    CPU, umTS, the slowest, first); ``report`` gets one line per agent. Returns the number of
    (agent, setting) pairs played (pairs an agent refuses are skipped) and whether the compiled
    code was kept in the cache."""
    ordered = sorted(AGENTS if names is None else names, key=lambda name: name != "umts")
    workers = min(len(ordered), os.cpu_count() or 1)
    played, kept = 0, True
    with ProcessPoolExecutor(workers, mp_context=get_context("spawn")) as pool:
        results: Iterator[tuple[int, str, bool]] = map(_warm_agent, ordered)
        if workers > 1:  # as each agent's process finishes
            futures = [pool.submit(_warm_agent, name) for name in ordered]
            results = (future.result() for future in as_completed(futures))
        for done, line, saved in results:
            report(line)
            played, kept = played + done, kept and saved
    if names is None:
        report(_warm_learning())
    return played, kept


def _warm_learning() -> str:
    """Compile Baum-Welch's forward-backward pass (``env.model=learned``, ``env=logged``):
    one signature, whatever the emission; the line reporting it."""
    from nslb_cli.learning import Logs, fit

    compile_quietly()
    start = time.perf_counter()
    rng = np.random.default_rng(0)
    fit(Logs(rng.integers(2, size=(2, 60)), rng.random((2, 60)), np.array([60, 60])), 2, 2)
    return f"learning (EM): {time.perf_counter() - start:.1f} s"


def _warm_agent(name: str) -> tuple[int, str, bool]:
    """Play agent ``name`` on every setting: the pairs played, the line reporting them, and
    whether the code compiled was kept in the cache."""
    compile_quietly()  # each compiling family's line would advise running nslb warmup
    start, done = time.perf_counter(), 0
    with tempfile.TemporaryDirectory(prefix="nslb-warmup-") as scratch:
        worlds = _worlds(Path(scratch))
        for env in worlds:
            if pairing_refusal(ENVIRONMENTS[env.name], AGENTS[name], env.name, name, env):
                continue  # a pairing that nslb run refuses
            try:
                agent = AGENTS[name].Params()
                config = RunConfig("warmup", env, agent, RunSettings(n_seeds=2, progress=False))
                with finite.arithmetic(env, agent):  # an overflow: a ConfigError
                    config.engine.simulate(env, agent, np.arange(2), config.run)
            except ConfigError:  # e.g. an agent that takes Gaussian rewards only
                continue
            done += 1
    line = f"{name}: {done} of {len(worlds)} settings, {time.perf_counter() - start:.1f} s"
    return done, line, cache_kept()


PRESETS = (("fixed", "known"), ("markov", "known"), ("markov", "prior"))
"""The paper presets' synthetic worlds (dynamics, model), whose JAX programs are compiled."""


def warm_up_jax(report: Callable[[str], None]) -> int:
    """Compile the JAX engine's programs of the paper presets (their worlds, each agent the
    engine covers, batches of ``run.batch_size`` seeds) into the cache, when JAX is
    installed; returns how many."""
    from nslb_cli.jax_engine.agents import own

    if importlib.util.find_spec("jax") is None:
        return 0
    from nslb_cli.jax_engine.engine import agent_of, world_of
    from nslb_cli.jax_engine.scan import compile_program

    compiled = 0
    for name in own():
        start = time.perf_counter()
        for dynamics, model in PRESETS:
            world = world_of(
                replace(ENVIRONMENTS["synthetic"].Params(), dynamics=dynamics, model=model)
            )
            compile_program(world, agent_of(AGENTS[name].Params(), world), RunSettings().batch_size)
            compiled += 1
        seconds = time.perf_counter() - start
        report(f"{name} (JAX engine): the presets' {len(PRESETS)} programs, {seconds:.1f} s")
    return compiled


def _worlds(scratch: Path) -> list[Any]:
    """The environment params of ``SETTINGS``, ``MOVIELENS`` (its data and cache in
    ``scratch``) and ``FAMILIES``, where some agents play alone."""
    synthetic, movielens = ENVIRONMENTS["synthetic"], ENVIRONMENTS["movielens"]
    worlds = [replace(synthetic.Params(), **values) for values in SETTINGS]
    data = write_ratings(scratch)
    cache = str(scratch / "cache")
    worlds.append(replace(movielens.Params(), data_dir=str(data), cache_dir=cache, **MOVIELENS))
    return worlds + [ENVIRONMENTS[name].Params(horizon=12) for name in FAMILIES]


def warm(engine: Engine, report: Callable[[str], None]) -> tuple[str | None, str | None]:
    """Compile ``engine``'s code of every agent now (``report`` gets a line per agent): what
    was compiled, in words (``None``: nothing), and why it was not kept (``None``: it was).
    The JAX engine's are the programs of the paper presets, when JAX is installed."""
    if isinstance(engine, JaxEngine):
        programs = warm_up_jax(report)
        return (f"{programs} JAX programs" if programs else None), None
    played, kept = warm_up(report)
    lost = f"the compiled code could not be kept in {CACHE}: later runs compile it again"
    return f"{played} agent settings", None if kept else lost
