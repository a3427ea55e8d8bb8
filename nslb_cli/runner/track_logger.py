"""The logging process of ``tracking=mlflow`` (``nslb_cli.runner.tracking``): logs each job
record of a spool folder as an MLflow run, as the jobs write them, until the command's end
marker; then it removes the spool.

``python -m nslb_cli.runner.track_logger SPOOL PLAN``; ``PLAN`` is JSON: ``uri``,
``experiment``, ``command`` (the command's pid), ``wait`` and, for a sweep, ``sweep`` (the
parent run's name and tags). It runs at the lowest CPU priority, and it imports MLflow (a
second and more of CPU) only at the command's end, once a command that does not wait has
gone, or ``DEFER`` seconds after its start: a short command's jobs never share their cores
with it (a small machine's two cores are often one core's two threads), and a long one's runs
appear in the store as its jobs end. A tracker that fails is one line on stderr
(``nslb: tracking: …``); the process then marks the spool ended, so the jobs stop writing
records, and stops.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import sys
import time
import warnings
from pathlib import Path
from typing import Any

from nslb_cli.common.errors import describe_error
from nslb_cli.store import tracking
from nslb_cli.store.results import read_json

POLL = 0.05  # seconds between looks into the spool
BATCH = 100  # MLflow takes at most 100 parameters, or tags, in one call
DEFER = 60.0  # seconds: MLflow's import is then at most 2 % of the command's time


def main(spool: Path, plan: dict[str, Any]) -> None:
    """Log the records of ``spool`` to ``plan``'s store until its end marker, or its command
    has gone; one warning line if the store fails."""
    command = int(plan["command"])  # this process's parent while it lives
    os.nice(19)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C stops the jobs; what ended is logged
    logging.getLogger("alembic").setLevel(logging.WARNING)  # the database's set-up
    warnings.simplefilter("ignore")  # MLflow's notes on its own future: not the user's concern
    defer(spool, command, leaving=not plan.get("wait"))
    try:
        (spool / tracking.LIVE).touch()
        client = tracking.client(plan["uri"])
        experiment = tracking.experiment_id(client, plan["experiment"], plan["uri"])
        parent = None
        if "sweep" in plan:
            sweep = plan["sweep"]
            parent = client.create_run(experiment, run_name=sweep["name"], tags=sweep["tags"])
        while True:
            ending = (spool / tracking.END).exists() or os.getppid() != command
            for path in sorted(spool.glob("job-*.json")):
                job = read_json(path)
                run_id = None if job is None else log_job(client, experiment, parent, job)
                folder = Path(str(job and job["folder"]))
                if run_id is not None and folder.is_dir():
                    kept = tracking.Tracked(tracking.shown(plan["uri"]), experiment, run_id)
                    tracking.record(folder, kept)
                (folder / tracking.PENDING_FILE).unlink(missing_ok=True)
                path.unlink()
            if ending:
                break
            time.sleep(POLL)
        if parent is not None:
            client.set_terminated(parent.info.run_id)
        shutil.rmtree(spool, ignore_errors=True)
    except Exception as err:  # the store refused a write: a locked or read-only database, say
        failed(spool, plan["uri"], err)


def failed(spool: Path, uri: str, err: Exception) -> None:
    """Say in one line that the store failed, unmark the folders of the records left, and
    mark the spool ended so that the jobs write no more records; remove it if the command had
    ended already (else the command does)."""
    if not isinstance(err, tracking.TrackingFailed):
        err = tracking.TrackingFailed(f"{tracking.shown(uri)}: {describe_error(err)}")
    tracking.warn(err)
    for path in spool.glob("job-*.json"):  # not to be logged: no folder waits for it
        job = read_json(path)
        if job is not None:
            (Path(str(job["folder"])) / tracking.PENDING_FILE).unlink(missing_ok=True)
    if (spool / tracking.END).exists():
        shutil.rmtree(spool, ignore_errors=True)
    else:
        (spool / tracking.END).touch()


def defer(spool: Path, command: int, leaving: bool) -> None:
    """Wait, at no cost, until the command's end marker or ``DEFER`` seconds; where the
    command then leaves without waiting (``leaving``), until it has gone too (at most
    ``DEFER`` more), so that its last moments keep their cores."""
    start = time.monotonic()
    while not (spool / tracking.END).exists() and os.getppid() == command:
        if time.monotonic() - start > DEFER:
            return
        time.sleep(POLL)
    start = time.monotonic()
    while leaving and os.getppid() == command and time.monotonic() - start < DEFER:
        time.sleep(POLL)


def log_job(client: Any, experiment: str, parent: Any, job: dict[str, Any]) -> str:
    """Log the record of a job as a run of ``experiment`` (a child of ``parent``, where a
    sweep's); its run id."""
    from mlflow.entities import Metric, Param

    tags = dict(job["tags"])
    if parent is not None:
        tags["mlflow.parentRunId"] = parent.info.run_id
    run = client.create_run(experiment, start_time=job["start"], tags=tags, run_name=job["name"])
    run_id, end = run.info.run_id, job["end"]
    params = [Param(k, v) for k, v in job["params"].items()]
    metrics = [
        Metric(name, value, end, int(step))
        for name, values in job["metrics"].items()
        for step, value in values
    ]
    for first in range(0, max(len(params), len(metrics), 1), BATCH):
        client.log_batch(
            run_id, metrics=metrics[first : first + BATCH], params=params[first : first + BATCH]
        )
    for artifact in job["artifacts"]:
        if Path(artifact).is_file():
            client.log_artifact(run_id, artifact)
    client.set_terminated(run_id, status=job["status"], end_time=end)
    return str(run_id)


if __name__ == "__main__":
    main(Path(sys.argv[1]), json.loads(sys.argv[2]))
