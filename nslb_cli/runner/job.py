"""One Hydra job: validate, pick the seeds not yet done, simulate them in batches, write.

The job writes its run folder under the folder's lock (:mod:`nslb_cli.store.lock`), only
after checking that the folder holds nothing but nslb's results of its own config
(:mod:`nslb_cli.store.folder`); with ``run.overwrite`` the new results replace the old ones
only once all are written (:mod:`nslb_cli.store.staging`).
"""

from __future__ import annotations

import functools
import json
import logging
import time
from collections.abc import Iterable
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
from nslb_cli.store import output, parquet, provenance, staging
from nslb_cli.store.atomic import remove_stale_temporaries
from nslb_cli.store.folder import (
    OutputConflict,
    claim,
    refuse_foreign_files,
    refuse_other_versions,
    restore_records,
    result_key,
    scan,
    written_under_lock,
)
from nslb_cli.store.lock import FolderLock
from nslb_cli.store.results import Layout, counted, seed_ranges

log = logging.getLogger("nslb")


class CodeRaised(RuntimeError):
    """A plugin's agent or environment raised an ``OSError`` while its seeds played (not
    nslb's writing of results): the message is its one line."""


def simulate_seeds(config: RunConfig, seeds: np.ndarray) -> Trace:
    """:func:`play_seeds`; an ``OSError`` a plugin's code raises is told from one of nslb's
    own writes (:class:`CodeRaised`)."""
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
    """What decides a job's numbers besides nslb's version: its engine's part (the JAX
    engine's revision and the JAX and jaxlib versions), and the package and version of a
    plugin's agent or environment (its code is not nslb's); ``None`` for nslb's own code on
    the default engine, pinned by nslb's version alone."""
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
    """Simulate the seeds of ``config`` missing from ``folder``; return the job's objective:
    the mean over its seeds (those written now and those done before) of the final value
    of ``run.objective`` (``cum_regret`` by default), what a sweeper such as Optuna's
    minimises.

    Under the folder's lock: a swap of overwritten results that a killed process left is
    finished, temporaries of killed writers are removed, a folder holding files nslb did
    not write or results of another config is refused, damaged seeds are recomputed. The
    folder is claimed (its ``config.yaml`` written) only with the first results: a job
    that fails before leaves nothing that blocks the next one.
    """
    settings = recorded(container(resolved), config.env)
    data = data_record(config)
    key = result_key(settings, data["fingerprint"] if data is not None else None, config.engine.key)
    with FolderLock(folder, key, provenance.command()):
        staging.recover(folder)
        remove_stale_temporaries(folder, held=written_under_lock)
        remove_stale_temporaries(folder / parquet.PARTS, held=lambda name: True)
        refuse_foreign_files(folder)
        if not config.run.overwrite:
            _simulate_missing(config, settings, data, key, folder, folder)
        else:
            try:
                _simulate_missing(config, settings, data, key, staging.begin(folder), folder)
            except BaseException:
                staging.abandon(folder)
                raise
            removed = staging.commit(folder)
            if removed:
                log.warning(
                    "%s: run.overwrite removed %d old seeds this run did not simulate (%s)",
                    folder,
                    len(removed),
                    seed_ranges(removed),
                )
        return float(final_values(folder, config.seeds, config.run.objective, config).mean())


def run_job_guarded(config: RunConfig, resolved: DictConfig, folder: Path) -> float:
    """:func:`run_job`, in a process of its own (:mod:`nslb_cli.common.apart`) when a
    plugin's code runs or when a launcher's worker runs it: a job that hangs its process
    no more than it would, but one that ends it (``os._exit``, ``SystemExit``) or whose
    process is killed (the out-of-memory killer, ``kill -9``) raises
    :class:`~nslb_cli.common.apart.Ended` there, a failed job, and the worker, with the
    launcher and the sweep's other jobs, goes on. nslb's own jobs run by the command
    itself run in it: consecutive jobs share compiled code."""
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
    return (
        f" (its traceback: {files[0].baseFilename})"
        if files
        else " (no log file keeps its traceback)"
    )


def layout(config: RunConfig) -> Layout:
    """How ``config``'s job stores its results (``run.format``, ``run.every``)."""
    return Layout(config.run.format, config.run.every)


def final_values(folder: Path, seeds: Iterable[int], column: str, config: RunConfig) -> np.ndarray:
    """The final value of ``column`` for each of ``seeds`` in ``folder``."""
    return output.final_values(folder, seeds, column, layout(config))


def _simulate_missing(
    config: RunConfig,
    settings: dict[str, Any],
    data: dict[str, Any] | None,
    key: str,
    folder: Path,
    shown: Path,
) -> None:
    """Simulate into ``folder`` the seeds of ``config`` it lacks (its damaged ones again);
    the lines logged name ``shown``, the run folder (``folder`` is its staging folder when
    overwriting)."""
    state = scan(folder, key, settings, _data_text(data), layout(config))
    for seed, problem in sorted(state.damaged.items()):
        log.warning("%s: seed=%d.csv %s; simulating it again", shown, seed, problem)
    for name, problem in sorted(state.damaged_files.items()):
        log.warning("%s: %s is %s; simulating its seeds again", shown, name, problem)
    left = sorted(state.lost - state.done - set(config.seeds.tolist()))
    if left:  # the file goes when this run's results are sealed
        log.warning(
            "%s: seeds %s of the damaged file are lost: this run does not simulate them "
            "(run.seed and run.n_seeds choose the seeds)",
            shown,
            seed_ranges(left),
        )
    if state.done:  # its seeds know their config: a lost or damaged record is rewritten
        restore_records(folder, settings, _data_text(data))
    pending = np.array([s for s in config.seeds if s not in state.done], dtype=np.int64)
    label = f"{config.agent.name} on {config.env.name}"
    if len(pending) == 0:
        output.finish(folder, layout(config), config.run.batch_size)  # a stopped job's parts
        done = len(config.seeds)
        log.info(
            "%s: %s already in %s", label, "its 1 seed" if done == 1 else f"all {done} seeds", shown
        )
        return
    numbers = _numbers(config)
    if state.done:
        refuse_other_versions(folder, numbers, frozenset(state.done))
    start = time.perf_counter()
    for first in range(0, len(pending), config.run.batch_size):
        batch = pending[first : first + config.run.batch_size]
        trace = simulate_seeds(config, batch)
        output.check_summary(trace)  # before the folder is claimed
        finite.check_finite(trace, config.env)  # nothing of a batch that overflowed
        check_owner()  # a worker whose command was killed writes nothing more
        check_stop()  # nor one asked to stop (a finished batch is simulated again next time)
        if first == 0:
            claim(folder, settings)  # this invocation's run section
            restore_records(folder, settings, _data_text(data))
        if numbers is not None:  # first: a seed a stopped writer left has its line
            provenance.record(folder, batch.tolist(), numbers)
        output.write_batch(folder, trace, key, layout(config))
        if numbers is None:
            provenance.record(folder, batch.tolist())
    check_owner()
    output.finish(folder, layout(config), config.run.batch_size)
    seconds = time.perf_counter() - start
    everything = sorted(state.done | set(pending.tolist()))
    regret = final_values(folder, everything, "cum_regret", config)
    spread = (
        f"± {regret.std(ddof=1) / np.sqrt(len(regret)):.2f} (mean ± SE)"
        if len(regret) > 1
        else "(one seed: no standard error)"
    )
    log.info(
        "%s: %s added (%d already done) in %.1f s -> %s; final cum_regret over its %s %.2f %s",
        label,
        counted(len(pending), "seed"),
        len(state.done & set(config.seeds.tolist())),
        seconds,
        shown,
        counted(len(regret), "seed"),
        regret.mean(),
        spread,
    )


def _data_text(data: dict[str, Any] | None) -> str | None:
    return None if data is None else json.dumps(data, indent=1, sort_keys=True) + "\n"


def data_record(config: RunConfig) -> dict[str, Any] | None:
    """What ``data.json`` records (the environment's ``provenance``: the data's fingerprint
    and diagnostics) for an environment built from data files, else ``None``. The
    fingerprint is part of the result key: results of other data never mix with these."""
    describe = getattr(ENVIRONMENTS[config.env.name], "provenance", None)
    if describe is None:
        return None
    record: dict[str, Any] = describe(config.env)
    return record
