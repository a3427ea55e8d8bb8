"""One Hydra job: validate, pick the seeds not yet done, simulate them in batches, write."""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from pathlib import Path
from typing import Any

import numpy as np
from omegaconf import DictConfig

from nslb_cli.agents import AGENTS
from nslb_cli.core.rng import BatchRNG
from nslb_cli.core.trace import Trace
from nslb_cli.core.world import World
from nslb_cli.envs import ENVIRONMENTS
from nslb_cli.runner.compose import RunConfig, container
from nslb_cli.runner.simulate import build_agent, simulate
from nslb_cli.store import provenance
from nslb_cli.store.atomic import atomic_write_text, remove_stale_temporaries
from nslb_cli.store.results import (
    OutputConflict,
    check_claim,
    claim_folder,
    clear_results,
    finished_seeds,
    write_trace,
)

log = logging.getLogger("nslb")

DATA_FILE = "data.json"


def simulate_seeds(config: RunConfig, seeds: np.ndarray) -> Trace:
    """Build the world and the agent for ``seeds`` and play the whole horizon."""
    world = build_world(config.env, seeds)
    agent = build_agent(AGENTS[config.agent.name], config.agent, world, BatchRNG(seeds))
    return simulate(world, agent, progress=config.run.progress)


_last_world: tuple[str, bytes, World] | None = None


def build_world(env: Any, seeds: np.ndarray) -> World:
    """The world of environment params ``env`` for ``seeds``, built once for consecutive
    jobs that share it.

    A world depends on the environment's params and the seeds only (docs/design.md §2), and
    the jobs of a sweep over agents, run one after another in one process, share it: the
    last world built is kept (one world: memory stays bounded) and handed out again. Its
    arrays are made read-only, so no agent can change what the next job sees.
    """
    global _last_world
    kind = type(env)
    values = repr(dataclasses.asdict(env))  # every field, whatever the class's own repr shows
    key = f"{kind.__module__}.{kind.__qualname__}{values}", np.asarray(seeds, np.int64).tobytes()
    if _last_world is not None and _last_world[:2] == key:
        return _last_world[2]
    _last_world = None  # free the previous world before building the next
    world = ENVIRONMENTS[env.name].build(env, seeds)
    _read_only(world)
    _last_world = (*key, world)
    return world


def _read_only(value: Any) -> None:
    """Make every array of ``value`` (a dataclass, and those inside it) read-only."""
    if isinstance(value, np.ndarray):
        value.flags.writeable = False
    elif dataclasses.is_dataclass(value):
        for field in dataclasses.fields(value):
            _read_only(getattr(value, field.name))


def run_job(config: RunConfig, resolved: DictConfig, folder: Path) -> list[int]:
    """Simulate the seeds of ``config`` missing from ``folder``; return the seeds written.

    The folder is claimed (its ``config.yaml`` written) only when the first results are:
    a job that fails before leaves nothing that blocks the next one. Temporary files left
    by killed processes are removed; ``run.overwrite`` first removes the finished results.
    """
    settings = container(resolved)
    remove_stale_temporaries(folder)
    if config.run.overwrite:
        clear_results(folder)
    check_claim(folder, settings)
    data = data_record(folder, config)
    done = finished_seeds(folder)
    pending = np.array([s for s in config.seeds if s not in done], dtype=np.int64)
    label = f"{config.agent.name} on {config.env.name}"
    if len(pending) == 0:
        log.info("%s: all %d seeds already in %s", label, len(config.seeds), folder)
        return []
    start = time.perf_counter()
    final_regret = []
    for first in range(0, len(pending), config.run.batch_size):
        batch = pending[first : first + config.run.batch_size]
        trace = simulate_seeds(config, batch)
        if first == 0:
            claim_folder(folder, settings)
            if data is not None:
                atomic_write_text(folder / DATA_FILE, data)
        write_trace(folder, trace)
        provenance.record(folder, batch.tolist())
        final_regret.append(trace.regret.sum(axis=1))
    regret = np.concatenate(final_regret)
    se = regret.std(ddof=1) / np.sqrt(len(regret)) if len(regret) > 1 else float("nan")
    log.info(
        "%s: %d seeds (%d already done) in %.1f s -> %s; final cum_regret %.2f ± %.2f (mean ± SE)",
        label,
        len(pending),
        len(done & set(config.seeds.tolist())),
        time.perf_counter() - start,
        folder,
        regret.mean(),
        se,
    )
    return pending.tolist()


def data_record(folder: Path, config: RunConfig) -> str | None:
    """``data.json`` (the environment's ``provenance``: data fingerprint and diagnostics) for
    an environment built from data files, else ``None``; refuses to add seeds of other data
    to a folder (local data paths are not part of its name)."""
    describe = getattr(ENVIRONMENTS[config.env.name], "provenance", None)
    if describe is None:
        return None
    record = describe(config.env)
    path = folder / DATA_FILE
    if path.is_file() and finished_seeds(folder):
        before = json.loads(path.read_text()).get("fingerprint")
        if before != record["fingerprint"]:
            raise OutputConflict(
                f"{folder} holds results of other data (ratings file fingerprint {before}, "
                f"now {record['fingerprint']}); pass hydra.run.dir=… (or hydra.sweep.dir=…) "
                "to write elsewhere, or remove that folder"
            )
    return json.dumps(record, indent=1) + "\n"
