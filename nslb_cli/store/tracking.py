"""An experiment tracker's store as the runner and the plots share it (``tracking=mlflow``).

MLflow is optional (extra ``[mlflow]``) and imported only here, when a command asks for it.
A tracker that fails is ``TrackingFailed``, said in one line: tracking never fails a run.
A run folder keeps the MLflow run its latest job logged in ``TRACKED_FILE`` (a hidden
file, beside ``config.yaml``, never among the results), so ``nslb plot`` can add figures to it,
and ``PENDING_FILE`` while that job waits to be logged.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.parse
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from nslb_cli.common.errors import describe_error
from nslb_cli.store.atomic import atomic_write_text
from nslb_cli.store.results import read_json

TRACKED_FILE = ".nslb-tracking.json"
PENDING_FILE = ".nslb-tracking-pending"
"""A run folder's mark that its latest job waits to be logged (removed once it is)."""
END = "end"
"""The file a command writes into its tracking spool once its last job has ended."""
LIVE = "live"
"""The file a logging process writes into its spool once it logs (MLflow imported)."""
OUTPUTS = Path("outputs")
"""The outputs root of ``conf/config.yaml`` (``hydra.run.dir``, ``hydra.sweep.dir``)."""
DATABASE = "mlflow.db"
ARTIFACTS = "mlflow-artifacts"
INSTALL = "mlflow is not installed: pip install 'nslb-cli[mlflow]'"
QUIET = {
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0",
    "MLFLOW_HTTP_REQUEST_TIMEOUT": "5",
    "MLFLOW_LOGGING_LEVEL": "WARNING",
}
"""An unreachable server fails at once rather than after minutes of retries, and MLflow's
notes (its database's set-up) stay off the console; a user's own settings are kept."""


class TrackingFailed(RuntimeError):
    """The tracker cannot be reached or written; ``str(err)`` is one line."""


def warn(err: BaseException) -> None:
    """Say in one line on stderr that tracking failed (``nslb: tracking: …``)."""
    line = str(err) if isinstance(err, TrackingFailed) else describe_error(err)
    print(f"nslb: tracking: {line[:300]}", file=sys.stderr)


def default_uri(where: Path | None = None) -> str:
    """The local store: SQLite ``outputs/mlflow.db`` below ``where`` (the current folder)."""
    return f"sqlite:///{((where or Path.cwd()) / OUTPUTS / DATABASE).absolute()}"


def artifact_location(uri: str) -> str | None:
    """Where a new experiment of the SQLite store ``uri`` keeps its artifacts: beside the
    database (MLflow's default is ``mlruns/`` in whichever folder a process runs in); ``None``
    (the server's choice) for other stores."""
    if not uri.startswith("sqlite:///"):
        return None
    return (Path(uri.removeprefix("sqlite:///")).parent / ARTIFACTS).absolute().as_uri()


def client(uri: str) -> Any:
    """An ``MlflowClient`` of the store ``uri``, its SQLite folder made; ``TrackingFailed``
    when mlflow is missing or the store cannot be opened."""
    for name, value in QUIET.items():
        os.environ.setdefault(name, value)
    try:
        import mlflow
    except ImportError:
        raise TrackingFailed(INSTALL) from None
    try:
        if uri.startswith("sqlite:///"):
            Path(uri.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
        opened = mlflow.MlflowClient(uri)
        opened.search_experiments(max_results=1)  # reach the store now, not at the first run
        return opened
    except Exception as err:
        raise TrackingFailed(f"cannot use {shown(uri)}: {describe_error(err)}") from None


def experiment_id(opened: Any, name: str, uri: str) -> str:
    """The id of experiment ``name``, created if new (by another process meanwhile: found)."""
    found = opened.get_experiment_by_name(name)
    if found is not None:
        return str(found.experiment_id)
    try:
        return str(opened.create_experiment(name, artifact_location=artifact_location(uri)))
    except Exception:
        found = opened.get_experiment_by_name(name)
        if found is None:
            raise
        return str(found.experiment_id)


def shown(uri: str) -> str:
    """``uri`` without a password, as messages and ``TRACKED_FILE`` show it."""
    parts = urllib.parse.urlsplit(uri)
    if parts.password is None:
        return uri
    host = parts.hostname or ""
    netloc = f"{parts.username}@{host}" + (f":{parts.port}" if parts.port else "")
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc))


@dataclass(frozen=True)
class Tracked:
    """The MLflow run that a run folder's latest job logged, and its store."""

    uri: str
    experiment_id: str
    run_id: str


def record(folder: Path, tracked: Tracked) -> None:
    """Keep ``tracked`` in ``folder``'s ``TRACKED_FILE``."""
    atomic_write_text(folder / TRACKED_FILE, json.dumps(asdict(tracked), indent=1) + "\n")


def recorded(folder: Path) -> Tracked | None:
    """The MLflow run ``folder`` keeps, ``None`` if none (or its record is damaged)."""
    kept = read_json(folder / TRACKED_FILE)
    try:
        return Tracked(str(kept["uri"]), str(kept["experiment_id"]), str(kept["run_id"]))
    except (KeyError, TypeError):
        return None
