"""One Hydra job: validate, pick the seeds not yet done, simulate them in batches, write."""

from __future__ import annotations

import functools
import logging
import time
from pathlib import Path
from typing import Any

import numpy as np
from omegaconf import DictConfig

from nslb_cli.agents import AGENTS
from nslb_cli.bandit import finite
from nslb_cli.bandit.trace import BrokenContract, Trace
from nslb_cli.common.apart import Ended, run_apart
from nslb_cli.common.errors import ConfigError, describe_error
from nslb_cli.common.stopping import check as check_stop
from nslb_cli.common.stopping import stopped_by
from nslb_cli.envs import ENVIRONMENTS
from nslb_cli.runner.config import RunConfig, container
from nslb_cli.runner.inputs import recorded
from nslb_cli.runner.owner import check_owner, in_worker
from nslb_cli.store.folder import OutputConflict
from nslb_cli.store.results import Layout, check_summary, counted
from nslb_cli.store.run_folder import RunFolder

log = logging.getLogger("nslb")


class CodeRaised(RuntimeError):
    """A plugin's agent or environment raised an ``OSError`` while its seeds played (not
    nslb's writing of results): the message is its one line."""


def simulate_seeds(config: RunConfig, seeds: np.ndarray) -> Trace:
    """``play_seeds``; an ``OSError`` a plugin's code raises is told from one of nslb's
    own writes (``CodeRaised``)."""
    try:
        with finite.arithmetic(config.env, config.agent):  # an overflow: one line
            return play_seeds(config, seeds)
    except OSError as err:
        if plugins_of(config.agent.name, config.env.name):
            raise CodeRaised(describe_error(err)) from err
        raise


def play_seeds(config: RunConfig, seeds: np.ndarray) -> Trace:
    """The trace of ``seeds``, one batch of ``config``'s, on its engine."""
    return config.engine.simulate(config.env, config.agent, seeds, config.run)


def _numbers(config: RunConfig) -> str | None:
    """What decides a job's numbers besides nslb's version: the engine's part and a plugin's
    package and version; ``None`` for nslb's own code on the default engine."""
    engine = config.engine.numbers()
    parts = [] if engine is None else [engine]
    return "; ".join(parts + plugins_of(config.agent.name, config.env.name)) or None


def plugins_of(agent: str, env: str) -> list[str]:
    """How messages name the plugins among a job's agent and environment (``agent 'x'
    (pkg 1.0)``): their code is not nslb's."""
    return [
        registry.describe(name)
        for registry, name in ((AGENTS, agent), (ENVIRONMENTS, env))
        if name in registry and registry.foreign(name)
    ]


def run_job(config: RunConfig, resolved: DictConfig, folder: Path) -> float:
    """Simulate the seeds of ``config`` missing from ``folder``; return the job's objective, the
    mean over all its seeds of the final ``run.objective``.

    Each batch is checked before anything of it is written; a job asked to stop writes nothing more.
    """
    label = f"{config.agent.name} on {config.env.name}"
    store = RunFolder(
        folder,
        recorded(container(resolved), config.env),
        data_record(config),
        Layout(config.run.format, config.run.every),
        batch_size=config.run.batch_size,
        engine=config.engine.key,
        engine_name=config.engine.name,
        numbers=_numbers(config),
        overwrite=config.run.overwrite,
    )
    with store.open():
        pending = store.missing(config.seeds)
        if len(pending) == 0:
            store.seal()  # a stopped job's parts
            done = len(config.seeds)
            shown = "its 1 seed" if done == 1 else f"all {done} seeds"
            log.info("%s: %s already in %s", label, shown, folder)
        else:
            start, said = time.perf_counter(), list(config.notes)
            for first in range(0, len(pending), config.run.batch_size):
                batch = pending[first : first + config.run.batch_size]
                simulating = time.perf_counter()
                trace = simulate_seeds(config, batch)
                seconds = time.perf_counter() - simulating  # the simulation alone, not the writing
                if trace.seconds is not None:  # an engine's own measure: a shared batch's share
                    seconds = trace.seconds
                if first == 0:  # what the agent says of how it played, from its first batch
                    said += AGENTS[config.agent.name].notes(config.agent, trace.summary, config.env)
                check_summary(trace)  # before the folder is claimed
                finite.check_finite(trace, config.env)  # nothing of a batch that overflowed
                check_owner()  # a worker whose command was killed writes nothing more
                check_stop()  # nor one asked to stop
                store.write(batch, trace, seconds)
            check_owner()
            store.seal()
            _report(config, store, pending, time.perf_counter() - start, said)
    # after the swap: an interrupted read leaves the new results in place
    return float(store.final_values(config.seeds, config.run.objective).mean())


def _report(
    config: RunConfig, store: RunFolder, pending: np.ndarray, seconds: float, notes: list[str]
) -> None:
    """The line of a job that added ``pending`` in ``seconds``, over all the folder's seeds,
    and its ``notes``."""
    everything = sorted(store.done | set(pending.tolist()))
    regret = store.final_values(everything, "cum_regret")
    spread = "(one seed: no standard error)"
    if len(regret) > 1:
        spread = f"± {regret.std(ddof=1) / np.sqrt(len(regret)):.2f} (mean ± SE)"
    log.info(
        "%s: %s added (%d already done) in %.1f s -> %s; final cum_regret over its %s %.2f %s%s",
        f"{config.agent.name} on {config.env.name}",
        counted(len(pending), "seed"),
        len(store.done & set(config.seeds.tolist())),
        seconds,
        store.path,
        counted(len(regret), "seed"),
        regret.mean(),
        spread,
        "".join(f"; {note}" for note in notes),
    )


def run_job_guarded(config: RunConfig, resolved: DictConfig, folder: Path) -> float:
    """``run_job``, apart (``nslb_cli.common.apart``) when a plugin's code runs or in a
    launcher's worker: a job that ends its process is then a failed job, and the sweep goes on.
    nslb's own jobs run by the command run in it: consecutive jobs share compiled code."""
    plugins = plugins_of(config.agent.name, config.env.name)
    if not plugins and not in_worker():
        return run_job(config, resolved, folder)
    try:
        return run_apart(functools.partial(run_job, config, resolved, folder), "the job")
    except (ConfigError, OutputConflict, OSError, MemoryError, Ended):
        raise
    except Exception as err:
        if not plugins or stopped_by(err) is not None:
            raise
        where = _traceback_into_log(err)
        whose = " or ".join(plugins)
        if isinstance(err, BrokenContract):
            raise Ended(f"{whose} breaks the agent contract: {err}") from None
        raised = str(err) if isinstance(err, CodeRaised) else describe_error(err)
        raise Ended(f"the code of {whose} raised {raised}{where}") from None


def _traceback_into_log(err: BaseException) -> str:
    """Write ``err``'s traceback into the job's log file (Hydra's ``nslb.log``) alone, not on
    the console; `` (its traceback: PATH)`` to say so, or nothing where there is none."""
    files = [h for h in logging.getLogger().handlers if isinstance(h, logging.FileHandler)]
    record = log.makeRecord(
        log.name, logging.ERROR, __file__, 0, "the plugin's job failed", (),
        (type(err), err, err.__traceback__),
    )  # fmt: skip
    for handler in files:
        handler.handle(record)
    kept = f"its traceback: {files[0].baseFilename}" if files else "no log file keeps its traceback"
    return f" ({kept})"


def data_record(config: RunConfig) -> dict[str, Any] | None:
    """What ``data.json`` records (the environment's ``provenance``) for an environment built from
    data files, else ``None``; the fingerprint is part of the result key."""
    describe = getattr(ENVIRONMENTS[config.env.name], "provenance", None)
    return None if describe is None else describe(config.env)
