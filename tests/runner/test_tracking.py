"""``tracking=mlflow``: what a job, a sweep (in this process, and in joblib's workers) and a
failing tracker leave in MLflow, read back with MLflow's own client.

End to end (the ``nslb`` command, in a process of its own, to the store: its output ends once
its logging process has, which writes to it), so slow (``make test-full``): each test pays
MLflow's import in the logging process (2 s and more). A template database made once
spares each test MLflow's set-up of a new one. Skipped without mlflow
(``pip install -e '.[mlflow]'``); the warning of a missing mlflow is tested without it.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from omegaconf import OmegaConf

from nslb_cli.plot import tracked
from nslb_cli.runner import tracking
from nslb_cli.store.results import final_value
from nslb_cli.store.tracking import INSTALL, PENDING_FILE, Tracked, default_uri, record, recorded
from tests.helpers.cli import QUICK
from tests.helpers.cli import nslb_process as nslb

JOB = ["agent=mts", "run.n_seeds=3", *QUICK, "tracking=mlflow"]
FOLDER = Path("outputs/default/synthetic/mts/env.horizon=60")


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An empty MLflow database, its tables made."""
    pytest.importorskip("mlflow")
    from nslb_cli.store.tracking import client

    where = tmp_path_factory.mktemp("template")
    client(default_uri(where))
    return where / "outputs" / "mlflow.db"


@pytest.fixture
def store(template: Path, tmp_path: Path) -> Any:
    """An ``MlflowClient`` of the default store below ``tmp_path`` (a copy of ``template``)."""
    import mlflow

    (tmp_path / "outputs").mkdir()
    shutil.copy(template, tmp_path / "outputs" / "mlflow.db")
    return mlflow.MlflowClient(default_uri(tmp_path))


def runs(store: Any, experiment: str) -> list[Any]:
    found = store.get_experiment_by_name(experiment)
    assert found is not None, f"no experiment {experiment}"
    return list(store.search_runs([found.experiment_id]))


@pytest.mark.slow
def test_a_job_is_a_run_of_its_config_tags_final_metrics_and_config_file(
    store: Any, tmp_path: Path
) -> None:
    done = nslb("run", *JOB, "hydra.callbacks.tracking.experiment=mine", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "nslb: tracking" not in done.stderr
    (run,) = runs(store, "mine")
    folder = tmp_path / FOLDER
    config = yaml.safe_load((folder / "config.yaml").read_text())
    assert run.info.status == "FINISHED"
    assert run.data.params["agent.name"] == "mts"
    assert run.data.params["env.horizon"] == str(config["env"]["horizon"]) == "60"
    assert run.data.params["run.n_seeds"] == "3"
    assert run.data.tags["nslb.engine"] == "numpy"
    assert run.data.tags["nslb.version"]
    finals = [final_value(folder, seed, "cum_regret") for seed in range(3)]
    mean = sum(finals) / 3
    assert run.data.metrics["final_cum_regret_mean"] == pytest.approx(mean)
    se = (sum((v - mean) ** 2 for v in finals) / 2 / 3) ** 0.5
    assert run.data.metrics["final_cum_regret_se"] == pytest.approx(se)
    assert "final_cum_reward_mean" in run.data.metrics
    assert [a.path for a in store.list_artifacts(run.info.run_id)] == ["config.yaml"]
    kept = recorded(folder)
    assert kept is not None and kept.run_id == run.info.run_id
    assert not (folder / PENDING_FILE).exists(), "logged: no longer waited for"


@pytest.mark.slow
@pytest.mark.parametrize("launcher", [[], ["hydra/launcher=joblib", "hydra.launcher.n_jobs=2"]])
def test_a_sweep_is_a_parent_run_with_its_jobs_as_children(
    store: Any, tmp_path: Path, launcher: list[str]
) -> None:
    agents = ["mts", "random", "cd_ucb"]
    sweep = [f"agent={','.join(agents)}", "run.n_seeds=2", *QUICK, "tracking=mlflow"]
    done = nslb("run", "-m", *launcher, *sweep, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "nslb: tracking" not in done.stderr
    found = runs(store, "default")
    parents = [r for r in found if "mlflow.parentRunId" not in r.data.tags]
    assert len(parents) == 1, [r.info.run_name for r in found]
    children = [r for r in found if r.data.tags.get("mlflow.parentRunId")]
    assert {r.data.tags["mlflow.parentRunId"] for r in children} == {parents[0].info.run_id}
    assert sorted(r.data.params["agent.name"] for r in children) == sorted(agents)
    assert all("final_cum_regret_mean" in r.data.metrics for r in children)
    assert not list((tmp_path / "outputs/default").glob(".nslb-tracking*")), "spool removed"


@pytest.mark.slow
def test_plot_track_logs_each_groups_figures_to_its_jobs_runs(store: Any, tmp_path: Path) -> None:
    sweep = ["agent=mts,random", "run.n_seeds=2", *QUICK, "tracking=mlflow"]
    assert nslb("run", "-m", *sweep, cwd=tmp_path).returncode == 0
    done = nslb("plot", "outputs/default", "--format", "png", "--track", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "nslb: tracking" not in done.stderr and "--track" not in done.stderr
    children = [r for r in runs(store, "default") if r.data.tags.get("mlflow.parentRunId")]
    assert len(children) == 2
    for run in children:
        logged = {a.path for a in store.list_artifacts(run.info.run_id, "figures")}
        assert "figures/default-cum_regret.png" in logged, logged
        assert "figures/default-summary.md" in logged, "the group's tables too"
        assert "figures/summary.md" not in logged, "not what belongs to no group"


@pytest.mark.slow
def test_a_tracker_that_fails_is_one_warning_and_the_run_goes_on(tmp_path: Path) -> None:
    pytest.importorskip("mlflow")
    (tmp_path / "blocked").write_text("a file where the store's folder goes")
    uri = f"sqlite:///{tmp_path}/blocked/mlflow.db"
    done = nslb("run", *JOB, f"hydra.callbacks.tracking.uri={uri}", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    warned = [line for line in done.stderr.splitlines() if line.startswith("nslb: tracking: ")]
    assert len(warned) == 1 and "blocked" in warned[0], done.stderr
    assert len(list((tmp_path / FOLDER).glob("seed=*.csv"))) == 3
    assert not (tmp_path / FOLDER / PENDING_FILE).exists(), "never to be logged: not waited for"


def test_without_mlflow_tracking_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "mlflow" else real(name, *a)
    )
    config = OmegaConf.create({"name": "x", "hydra": {"sweep": {"dir": str(tmp_path)}}})
    tracker = tracking.Tracking(default_uri(tmp_path))
    tracker.on_multirun_start(config)
    assert capsys.readouterr().err == f"nslb: tracking: {INSTALL}\n"
    assert tracker.spool is None and not list(tmp_path.iterdir()), "nothing started"


class Logger:
    """A logging process that ends after ``polls`` looks (never, for ``None``)."""

    def __init__(self, polls: int | None) -> None:
        self.polls = polls

    def poll(self) -> int | None:
        if self.polls is None:
            return None
        self.polls -= 1
        return 0 if self.polls < 0 else None

    def kill(self) -> None:
        raise AssertionError("a logger still at work is left to finish")


@pytest.mark.parametrize("wait", [False, True])
def test_the_command_waits_for_its_logger_a_share_of_its_time_or_with_wait_to_the_end(
    tmp_path: Path, wait: bool
) -> None:
    tracker = tracking.Tracking(default_uri(tmp_path), wait=wait)
    spool = tmp_path / "spool"
    spool.mkdir()
    (spool / "live").touch()  # a logging process that has begun
    logger = Logger(None if not wait else 20)
    tracker.spool, tracker._logger = spool, logger  # type: ignore[assignment]
    tracker.since = time.monotonic() - 1.0  # tracking for a second: 0.03 s of patience
    started = time.monotonic()
    tracker._finish()
    assert time.monotonic() - started < tracking.PATIENCE / 2, "no wait beyond its share"
    assert (spool / "end").exists() != wait, "left to the logger, which removes it"
    assert logger.polls is None or logger.polls < 0, "with wait, to the logger's end"


def test_plot_track_waits_for_a_folder_still_being_logged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, figure = tmp_path / "run", tmp_path / "g-cum_regret.png"
    folder.mkdir()
    figure.write_bytes(b"png")
    (folder / PENDING_FILE).touch()
    logged: list[tuple[str, str]] = []

    class Client:
        def log_artifact(self, run_id: str, path: str, where: str) -> None:
            logged.append((run_id, Path(path).name))

    def logging_process() -> None:  # what the logging process does once it has logged
        time.sleep(0.3)
        record(folder, Tracked("sqlite:///x.db", "1", "run-1"))
        (folder / PENDING_FILE).unlink()

    monkeypatch.setattr("nslb_cli.store.tracking.client", lambda uri: Client())
    later = threading.Thread(target=logging_process)
    later.start()
    taken = tracked.log_group_files({tmp_path / "g": [folder]}, [figure], warn=pytest.fail)
    later.join()
    assert taken == 1 and logged == [("run-1", "g-cum_regret.png")]


def test_plot_track_does_not_wait_for_a_mark_its_killed_logger_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / PENDING_FILE).touch()
    an_hour_ago = time.time() - 3600
    os.utime(folder / PENDING_FILE, (an_hour_ago, an_hour_ago))
    monkeypatch.setattr(tracked.time, "sleep", lambda seconds: pytest.fail("waited"))
    said: list[str] = []
    assert tracked.log_group_files({tmp_path / "g": [folder]}, [], warn=said.append) == 0
    assert said and "1 run folders have no MLflow run" in said[0]
