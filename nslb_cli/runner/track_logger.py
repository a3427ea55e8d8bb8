"""The logging process of ``tracking=mlflow`` (``nslb_cli.runner.tracking``): logs each job
record of a spool folder as an MLflow run, as the jobs write them, until the command's end.

``python -m nslb_cli.runner.track_logger SPOOL PLAN``; ``PLAN`` is JSON: ``uri``,
``experiment`` and, for a sweep, ``sweep`` (the parent run's name and tags). A tracker that
fails is one line on stderr (``nslb: tracking: …``); the process then stops logging, and the
command, which owns the spool, goes on.
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


def main(spool: Path, plan: dict[str, Any]) -> None:
    """Log the records of ``spool`` to ``plan``'s store until its end marker, or its command
    has gone; one warning line if the store fails."""
    command = os.getppid()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C stops the jobs; what ended is logged
    logging.getLogger("alembic").setLevel(logging.WARNING)  # the database's set-up
    warnings.simplefilter("ignore")  # MLflow's notes on its own future: not the user's concern
    try:
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
                path.unlink()
            if ending:
                break
            time.sleep(POLL)
        if os.getppid() != command:  # interrupted or killed: nobody else removes the spool
            shutil.rmtree(spool, ignore_errors=True)
        if parent is not None:
            client.set_terminated(parent.info.run_id)
    except tracking.TrackingFailed as err:
        tracking.warn(err)
    except Exception as err:  # the store refused a write: a locked or read-only database, say
        where = tracking.shown(plan["uri"])
        tracking.warn(tracking.TrackingFailed(f"{where}: {describe_error(err)}"))


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
