"""A process that runs a job killed (the out-of-memory killer, ``kill -9``) or ending itself
fails that job only, under every launcher: one line in the sweep's summary, the other jobs
finish, and running the command again completes the sweep.

The job kills its own process: a plugin agent that sends itself SIGKILL in round 6 while a
marker file exists. Launchers whose plugin is not installed (submitit: ``[slurm]``, Ray:
``[ray]``) are skipped; theirs are slow tests (``make test-full``).
"""

from __future__ import annotations

import importlib.util
import os
import signal
import socket
from pathlib import Path

import pytest

from nslb_cli.common.apart import Ended
from nslb_cli.runner import job
from nslb_cli.runner.compose import load
from nslb_cli.runner.owner import OWNER
from tests.faults.test_plugins import hostile
from tests.helpers.plugins import nslb_with

QUICK = ["env.horizon=60", "run.n_seeds=2", "run.progress=false"]
RAY = [
    "hydra/launcher=ray",
    "+hydra.launcher.ray.init.num_cpus=2",
    "+hydra.launcher.ray.init.include_dashboard=false",
]
LAUNCHERS = {
    "basic": ([], None),
    "joblib": (["hydra/launcher=joblib", "hydra.launcher.n_jobs=2"], None),
    "submitit": (["hydra/launcher=submitit_local"], "hydra_plugins.hydra_submitit_launcher"),
    "ray": (RAY, "hydra_plugins.hydra_ray_launcher"),
}
SLOW = pytest.mark.slow


def killer(site: Path, mark: Path, whom: str = "os.getpid()") -> str:
    """Install agent ``killer``: SIGKILL to process ``whom`` in round 6 while ``mark`` exists."""
    action = f"if os.path.exists({str(mark)!r}): os.kill({whom}, signal.SIGKILL)"
    return hostile(site, "killer", action)


@pytest.mark.parametrize(
    "launcher",
    ["basic", "joblib", pytest.param("submitit", marks=SLOW), pytest.param("ray", marks=SLOW)],
)
def test_a_job_whose_process_is_killed_fails_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, launcher: str
) -> None:
    args, plugin = LAUNCHERS[launcher]
    if plugin is not None and importlib.util.find_spec(plugin) is None:
        pytest.skip(f"{plugin} is not installed")
    monkeypatch.setenv("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # Ray on loopback only
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    mark = tmp_path / "kill"
    mark.touch()
    path = killer(tmp_path / "site", mark)
    sweep = [*args, "agent=killer,mts,random", *QUICK]
    first = nslb_with(path, "run", "-m", *sweep, cwd=tmp_path)
    assert first.returncode == 1, first.stderr
    lines = first.stderr.splitlines()  # Ray's workers' lines may come after the summary
    summary = lines.index("nslb: 1 of 3 sweep jobs failed:")
    assert lines[summary + 1] == (
        "  agent=killer env.horizon=60 run.n_seeds=2 run.progress=False: the job was killed "
        "by SIGKILL (the out-of-memory killer, or kill -9)"
    )
    found = tmp_path / "outputs/default/synthetic"
    assert sorted(p.parent.parent.name for p in found.glob("*/*/seed=1.csv")) == ["mts", "random"]
    mark.unlink()
    again = nslb_with(path, "run", "-m", *sweep, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert (found / "killer/env.horizon=60/seed=1.csv").is_file()


def test_a_lost_joblib_worker_stops_the_sweep_in_one_line(tmp_path: Path) -> None:
    """The worker itself killed (it only waits for its job's process): joblib stops every
    job; one line says so, and running the command again completes the sweep."""
    mark = tmp_path / "kill"
    mark.touch()
    path = killer(tmp_path / "site", mark, whom="os.getppid()")
    sweep = ["hydra/launcher=joblib", "hydra.launcher.n_jobs=2", "agent=killer,mts", *QUICK]
    first = nslb_with(path, "run", "-m", *sweep, cwd=tmp_path)
    assert first.returncode == 1
    assert first.stderr.splitlines()[-1] == (
        "nslb: the launcher lost a process (TerminatedWorkerError) and stopped the sweep; "
        "finished results are kept: run the command again to finish it"
    )
    mark.unlink()
    assert nslb_with(path, "run", "-m", *sweep, cwd=tmp_path).returncode == 0


def test_nslb_s_own_job_runs_in_the_command_but_apart_in_a_worker(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The command runs its jobs itself (they share worlds and compiled code); a launcher's
    worker runs each in a process of its own, which a kill ends alone (this test's process
    goes on)."""
    config = load(["agent=mts", "env.horizon=50"])
    monkeypatch.setattr(job, "run_job", lambda *_: float(os.getpid()))
    monkeypatch.setenv(OWNER, f"{socket.gethostname()}:{os.getpid()}")  # the command
    assert job.run_job_guarded(config, None, tmp_path) == os.getpid()  # type: ignore[arg-type]
    monkeypatch.setenv(OWNER, f"{socket.gethostname()}:{os.getppid()}")  # a worker
    assert job.run_job_guarded(config, None, tmp_path) != os.getpid()  # type: ignore[arg-type]
    monkeypatch.setattr(job, "run_job", lambda *_: os.kill(os.getpid(), signal.SIGKILL))
    with pytest.raises(Ended, match=r"^the job was killed by SIGKILL"):
        job.run_job_guarded(config, None, tmp_path)  # type: ignore[arg-type]
