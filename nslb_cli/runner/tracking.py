"""``tracking=mlflow``: each job an MLflow run, a sweep a parent run with its jobs as children.

A Hydra callback (``conf/tracking/mlflow.yaml``) that every sweeper and launcher calls. The
jobs themselves never import MLflow: each job's ``on_job_end``, in whichever process or
machine the launcher ran it, writes what its run folder holds (config, final metrics, tags,
artifacts to copy) as one record into a spool folder, and one logging process of the command
(``nslb_cli.runner.track_logger``) logs the records, so a job on a node that cannot reach the
tracking server is logged all the same. A sweep's spool is a hidden folder of its sweep
folder, which every worker writes; a single run's is a temporary folder.

The logging process runs at the lowest CPU priority and begins (imports MLflow, a second and
more of CPU) at the command's end, or a minute into it: a long command's runs appear as its
jobs end. At its end the command waits for a logging process that has begun at most ``SHARE``
of its own time, and not at all for one that has not (``wait=true``: until all is logged);
the logging process then finishes alone, removes the spool and says on the command's stderr
whatever failed. A short command thus ends a second or two before its runs are in the store,
and tracking never makes a command later by more than a few percent.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path
from typing import Any

from hydra.core.utils import JobReturn, JobStatus
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from nslb_cli.runner.config import container
from nslb_cli.store import provenance
from nslb_cli.store.atomic import atomic_write_text
from nslb_cli.store.folder import DATA_FILE, read_config
from nslb_cli.store.results import (
    RECORD_KEYS,
    flatten,
    read_json,
    seed_csv,
    seed_record,
)
from nslb_cli.store.run_folder import final_values
from nslb_cli.store.tracking import (
    END,
    INSTALL,
    LIVE,
    PENDING_FILE,
    TrackingFailed,
    default_uri,
    shown,
    warn,
)

SPOOL = ".nslb-tracking-spool"
SHARE = 0.03
"""The most a command waits at its end for its logging process, as a share of its time."""
PATIENCE = 30.0
"""Seconds a command with ``wait=true`` waits at its end for a logging process that logs
nothing more."""
FINALS = ("cum_regret", "cum_reward")


class Tracking(Callback):
    """Log ``nslb run``'s jobs to the MLflow store ``uri`` (default: ``default_uri``), in
    experiment ``experiment`` (default: the config's ``name``); ``wait``: the command ends
    only once all is logged. Picklable: launchers send it to their workers with the spool it
    writes into."""

    def __init__(
        self, uri: str | None = None, experiment: str | None = None, wait: bool = False
    ) -> None:
        self.uri = uri or default_uri()
        self.experiment = experiment
        self.wait = wait
        self.spool: Path | None = None  # where jobs write their records; None: not tracking
        self.started = 0.0  # when this process's current job started
        self.since = 0.0  # when tracking started (monotonic)
        self._logger: subprocess.Popen[bytes] | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_logger": None}  # a worker does not own the logger

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        self._start(config, Path(tempfile.mkdtemp(prefix="nslb-tracking-")), sweep=False)

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        spool = f"{SPOOL}-{socket.gethostname()}-{os.getpid()}"  # sweeps may share a folder
        self._start(config, Path(str(config.hydra.sweep.dir)) / spool, sweep=True)

    def on_job_start(self, config: DictConfig, **kwargs: Any) -> None:
        self.started = time.time()

    def on_job_end(self, config: DictConfig, job_return: JobReturn, **kwargs: Any) -> None:
        if self.spool is None or (self.spool / END).exists():
            return
        pending = Path(str(config.hydra.runtime.output_dir)) / PENDING_FILE
        try:
            record = job_record(config, job_return, self.started)
            number = int(config.hydra.job.get("num") or 0)
            pending.touch()  # until the logging process has logged it (nslb plot --track)
            atomic_write_text(self.spool / f"job-{number:06d}.json", json.dumps(record))
        except Exception as err:  # a job's record unwritable: the job's results stand
            pending.unlink(missing_ok=True)
            warn(err)

    def on_run_end(self, config: DictConfig, **kwargs: Any) -> None:
        self._finish()

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        self._finish()

    def _start(self, config: DictConfig, spool: Path, sweep: bool) -> None:
        """Make the spool and start the logging process (none, and one warning, when mlflow
        is not installed or the spool cannot be made)."""
        if importlib.util.find_spec("mlflow") is None:
            warn(TrackingFailed(INSTALL))
            return
        try:
            spool.mkdir(parents=True, exist_ok=True)
            plan: dict[str, Any] = {
                "uri": self.uri,
                "experiment": self.experiment or str(config.name),
                "command": os.getpid(),
                "wait": self.wait,
            }
            if sweep:
                plan["sweep"] = parent_run(config)
            command = [sys.executable, "-m", "nslb_cli.runner.track_logger", str(spool)]
            self._logger = subprocess.Popen(  # its own session: it may outlive the command
                [*command, json.dumps(plan)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                start_new_session=True,
            )
            self.spool, self.since = spool, time.monotonic()
        except OSError as err:
            warn(TrackingFailed(f"cannot start logging to {shown(self.uri)}: {err}"))

    def _finish(self) -> None:
        """Tell the logging process that the jobs have ended and wait for it: at most
        ``SHARE`` of the command's time once it logs (not at all before), or (``wait``)
        while it still logs. The spool is removed by whichever ends last."""
        if self.spool is None or self._logger is None:
            return
        spool, logger, self.spool, self._logger = self.spool, self._logger, None, None
        (spool / END).touch()
        if not self.wait and not (spool / LIVE).exists():
            return  # a logging process that has not begun would not end in time
        deadline = time.monotonic() + SHARE * (time.monotonic() - self.since)
        left, since = _records(spool), time.monotonic()
        while logger.poll() is None:
            now = time.monotonic()
            if not self.wait and now > deadline:
                return  # it finishes alone, and removes the spool
            if self.wait and now - since > PATIENCE:
                logger.kill()
                warn(TrackingFailed(f"{shown(self.uri)} too slow: {left} jobs not logged"))
                break
            time.sleep(0.01)
            if (records := _records(spool)) < left:
                left, since = records, time.monotonic()
        shutil.rmtree(spool, ignore_errors=True)


def _records(spool: Path) -> int:
    return len(list(spool.glob("job-*.json")))


def parent_run(config: DictConfig) -> dict[str, Any]:
    """The parent run of a sweep or study: its name and tags."""
    study = OmegaConf.select(config, "hydra.sweeper.study_name", default=None)
    return {
        "name": str(study or config.name),
        "tags": {
            "nslb.version": metadata.version("nslb-cli"),
            "nslb.command": provenance.command(),
            "nslb.sweep_dir": str(Path(str(config.hydra.sweep.dir)).absolute()),
        },
    }


def job_record(config: DictConfig, job_return: JobReturn, started: float) -> dict[str, Any]:
    """What the logging process logs of one ended job, from its run folder on disk."""
    folder = Path(str(config.hydra.runtime.output_dir)).absolute()
    failed = job_return.status != JobStatus.COMPLETED or job_return.return_value is None
    settings = read_config(folder) or {k: v for k, v in container(config).items() if k != "hydra"}
    tags = {
        "nslb.engine": str(config.run.engine),
        "nslb.version": metadata.version("nslb-cli"),
        "nslb.folder": str(folder),
        "nslb.overrides": " ".join(config.hydra.overrides.task),
    }
    data = read_json(folder / DATA_FILE)
    if isinstance(data, dict):
        tags |= {f"nslb.data.{k}": str(data[k]) for k in ("fingerprint", "release") if k in data}
    seeds = list(range(int(config.run.seed), int(config.run.seed) + int(config.run.n_seeds)))
    artifacts = [str(folder / name) for name in ("config.yaml", "summary.md")]
    return {
        "folder": str(folder),
        "name": run_name(config),
        "start": int(started * 1000),
        "end": int(time.time() * 1000),
        "status": "FAILED" if failed else "FINISHED",
        "params": {k: str(v)[:6000] for k, v in flatten(settings).items()},
        "tags": tags,
        "metrics": {} if failed else final_metrics(folder, str(config.run.format), seeds),
        "artifacts": [path for path in artifacts if Path(path).is_file()],
    }


def run_name(config: DictConfig) -> str:
    """A job's run name, as its folder is named: ``ENV/AGENT[/OVERRIDES]``."""
    parts = [config.hydra.runtime.choices.env, config.agent.name, config.hydra.job.override_dirname]
    return "/".join(str(part) for part in parts if part)


def final_metrics(folder: Path, layout: str, seeds: list[int]) -> dict[str, list[list[float]]]:
    """Mean and standard error over ``seeds`` of the final ``FINALS``, and each summary
    statistic the seeds' records hold, by seed (``seed/NAME``): ``[step, value]`` pairs,
    the step a seed (0 for one value)."""
    metrics: dict[str, list[list[float]]] = {}
    for column in FINALS:
        values = final_values(folder, layout, seeds, column)
        metrics[f"final_{column}_mean"] = [[0, float(values.mean())]]
        if len(values) > 1:
            se = values.std(ddof=1) / math.sqrt(len(values))
            metrics[f"final_{column}_se"] = [[0, float(se)]]
    if layout != "parquet":
        for seed in seeds:
            record = seed_record(seed_csv(folder, seed))
            for name, value in record.items():
                if name not in RECORD_KEYS and isinstance(value, int | float):
                    metrics.setdefault(f"seed/{name}", []).append([seed, float(value)])
    return metrics
