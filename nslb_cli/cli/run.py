"""``nslb run <overrides>``: check every job of the command line, then hand over to Hydra.

Every job's config, memory and folder are checked first, so bad input fails in one line
before anything is simulated.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.core.plugins import Plugins
from hydra.types import RunMode
from omegaconf import DictConfig

from nslb_cli.cli.errors import fail, warn
from nslb_cli.common.apart import Ended
from nslb_cli.common.errors import ConfigError, describe_error
from nslb_cli.common.stopping import stopped_by
from nslb_cli.runner import study
from nslb_cli.runner.compose import (
    CONFIG_MODULE,
    CONFIG_NAME,
    CommandLine,
    check_command_line,
    register_options,
)
from nslb_cli.runner.config import validate
from nslb_cli.runner.failures import Failures, start_sweep
from nslb_cli.runner.folders import intended_folder
from nslb_cli.runner.overrides import expand_home
from nslb_cli.runner.owner import end_with_owner
from nslb_cli.store import provenance
from nslb_cli.store.folder import OutputConflict
from nslb_cli.store.lock import folder_lock

MULTIRUN_FLAGS = ("-m", "--multirun")
USER_ERRORS = (ConfigError, OutputConflict, OSError, MemoryError, Ended)
LAUNCHER_LIBRARIES = ("joblib.", "submitit.", "ray.")
"""Where the errors of Hydra's launchers come from (a worker lost: ``TerminatedWorkerError``)."""


@hydra.main(version_base="1.3", config_path=f"pkg://{CONFIG_MODULE}", config_name=CONFIG_NAME)
def hydra_job(cfg: DictConfig) -> float | None:
    """One job of ``nslb run``: simulate into Hydra's output folder; return the job's
    objective (what a sweeper such as Optuna's reads), ``None`` if the job failed."""
    from nslb_cli.runner.job import run_job_guarded

    end_with_owner()  # a worker process: gone with its command, even one killed
    hydra_cfg = HydraConfig.get()
    folder = Path(hydra_cfg.runtime.output_dir)
    sweep = Failures(Path(hydra_cfg.sweep.dir)) if hydra_cfg.mode == RunMode.MULTIRUN else None
    if sweep is not None and sweep.stopped():
        return None
    objective = None
    try:
        if sweep is not None:
            _check_job_folder(cfg, hydra_cfg, folder)
        objective = run_job_guarded(validate(cfg), cfg, folder)
    except Exception as err:
        interruption = stopped_by(err)
        if interruption is not None:  # Ctrl-C inside compiled code arrives as a SystemError
            raise interruption from None
        if sweep is None:
            if isinstance(err, USER_ERRORS):
                fail(_user_message(err, folder))
            raise  # a bug: Hydra shows where
        overrides = list(hydra_cfg.overrides.task)
        line = _user_message(err, folder) if isinstance(err, USER_ERRORS) else describe_error(err)
        sweep.record(hydra_cfg.job.num, overrides, line, bool(cfg.run.get("fail_fast", False)))
        print(f"nslb: job {' '.join(overrides)} failed: {line}", file=sys.stderr)
    if sweep is not None and study.is_study(hydra_cfg.sweeper):
        study.record_trial(
            Path(hydra_cfg.sweep.dir),
            hydra_cfg.job.num,
            list(hydra_cfg.overrides.task),
            set(hydra_cfg.sweeper.params or {}),
            str(cfg.run.objective),
            objective,
        )
    return objective


def _check_job_folder(cfg: DictConfig, hydra_cfg: Any, folder: Path) -> None:
    """Refuse a sweep job that Hydra started in a stand-in folder because a file stands
    where its own folder goes (``nslb_cli.runner.folders.job_folder``)."""
    intended = intended_folder(
        hydra_cfg.sweep.dir,
        hydra_cfg.runtime.choices.env,
        cfg.agent.name,
        hydra_cfg.job.override_dirname,
    )
    if folder.resolve() != intended.resolve():
        blocking = next((p for p in (intended, *intended.parents) if p.is_file()), intended)
        raise OutputConflict(
            f"{blocking}: a file stands where this job's folder {intended} goes; move it away"
        )


def _user_message(err: BaseException, folder: Path) -> str:
    if isinstance(err, MemoryError):
        return "out of memory: lower run.batch_size (or the sizes of env and agent)"
    if isinstance(err, OSError) and not isinstance(err, ConfigError):
        return f"cannot write results in {err.filename or folder}: {err.strerror or err}"
    return str(err)


def main(arguments: Sequence[str]) -> None:
    """``nslb run``: check every job of the command line, then hand over to Hydra; bad input
    is a ``ConfigError`` (the dispatcher's one line)."""
    os.environ["HYDRA_FULL_ERROR"] = "1"  # Hydra's own errors reach us, not its report
    provenance.remember_command(["run", *arguments])
    given = list(arguments)
    arguments = expand_home(study.expand_best(given))
    study.refuse_grid(arguments)
    for problem in register_options(arguments):  # plugins' options, before Hydra composes
        warn(problem)
    flags = [a for a in arguments if a.startswith("-") and a not in MULTIRUN_FLAGS]
    plan: CommandLine | None = None
    if not flags:
        overrides = [a for a in arguments if a not in MULTIRUN_FLAGS]
        plan = check_command_line(overrides, multirun=len(overrides) < len(arguments))
        if plan.study is None:  # an evaluation of a best.yaml keeps off its tuning seeds
            study.refuse_tuning_seeds(given, *plan.seeds)
    start_sweep()
    failures = Failures(plan.output) if plan is not None and plan.multirun else None
    if failures is not None:
        failures.clear()
    logging.raiseExceptions = False  # a full disk stops nslb.log quietly; results still report
    # the workers' resource trackers, whose semaphores a SIGTERM leaves, must not warn
    sys.warnoptions.append("ignore::UserWarning:multiprocessing.resource_tracker")
    sys.warnoptions.append("ignore::UserWarning:joblib.externals.loky.backend.resource_tracker")
    # -m anywhere, as the check reads it: Hydra's parser takes overrides after its flags only;
    # and -m where the check found a sweep's mode in the config (a study, a preset's
    # hydra.mode), which Hydra 1.4 no longer reads before it refuses a sweep's overrides
    multirun = [a for a in arguments if a in MULTIRUN_FLAGS][:1]
    if plan is not None and plan.multirun:
        multirun = ["-m"]
    rest = [a for a in arguments if a not in MULTIRUN_FLAGS]
    if plan is not None and plan.study is not None and plan.study.note:
        warn(plan.study.note)
        rest.append(f"hydra.sweeper.n_trials={plan.study.trials}")
    sys.argv = [f"{Path(sys.argv[0]).name} run", *multirun, *rest]
    with contextlib.ExitStack() as stack:
        if plan is not None and plan.study is not None:
            stack.enter_context(_one_study(plan.output, plan.study, arguments))
        _launch(plan)
    if plan is not None and failures is not None and failures.collect():
        print(failures.summary(plan.jobs), file=sys.stderr)
        raise SystemExit(1)


@contextlib.contextmanager
def _one_study(folder: Path, plan: study.Plan, arguments: Sequence[str]) -> Iterator[None]:
    """Run a study in ``folder`` holding its writing lock, from its start to its record
    (``finish``), interrupted or not."""
    held = contextlib.ExitStack()
    try:
        held.enter_context(
            folder_lock(folder, f"study {' '.join(arguments)}", provenance.command())
        )
    except OutputConflict as err:
        fail(str(err))
    with held:
        import optuna

        logging.getLogger("alembic").setLevel(logging.WARNING)  # the storage's set-up
        optuna.logging.disable_default_handler()  # its colour codes, even into a file or pipe
        optuna.logging.enable_propagation()  # its lines in the command's own log format
        try:
            study.start(folder, plan)
        except (ConfigError, OutputConflict) as err:
            fail(str(err))
        try:
            yield
        finally:
            print(f"nslb: {study.finish(folder)}", file=sys.stderr)


def _register_plugins() -> None:
    """Register nslb's sweepers and launcher (an editable install hides ``hydra_plugins``).

    Imported after Hydra's plugin scan: the scan re-executes Hydra's plugin modules, and a sweeper
    made from the old basic sweeper would fail its ``super()`` call.
    """
    plugins = Plugins.instance()  # the first call scans
    from hydra_plugins.nslb_sweep.launcher import NslbLauncher
    from hydra_plugins.nslb_sweep.optuna_sweeper import OptunaSweeper
    from hydra_plugins.nslb_sweep.sweeper import NslbSweeper

    plugins.register(NslbSweeper)
    plugins.register(OptunaSweeper)
    plugins.register(NslbLauncher)


def _launch(plan: CommandLine | None) -> None:
    """Hand over to Hydra, nslb's plugins registered."""
    _register_plugins()
    try:
        hydra_job()
    except ConfigError as err:  # a job of the sweep, checked by nslb's sweeper before any runs
        fail(str(err))
    except OSError as err:  # Hydra's files (multirun.yaml, nslb.log) on a full disk, say
        where = err.filename or (plan.output.absolute() if plan else "the output folder")
        fail(f"cannot write {where}: {err.strerror or err}")
    except Exception as err:  # a launcher's own process killed: one that waits for a job's
        if not type(err).__module__.startswith(LAUNCHER_LIBRARIES):
            raise
        print(
            f"nslb: the launcher lost a process ({type(err).__name__}) and stopped the sweep; "
            "finished results are kept: run the command again to finish it",
            file=sys.stderr,
        )
        raise SystemExit(1) from None
