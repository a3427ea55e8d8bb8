"""A job checks that the command that owns it still runs, where it can see that command."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nslb_cli.common.stopping import Terminated
from nslb_cli.runner.owner import OWNER, check_owner, claim_ownership, owner_alive


def _gone_pid() -> int:
    """The pid of a process that has ended (and been reaped)."""
    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(done.stdout)


def test_a_job_whose_command_has_gone_on_this_machine_stops(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    gone = _gone_pid()
    for owner in (f"{socket.gethostname()}:{gone}", str(gone)):  # a bare pid: this machine
        monkeypatch.setenv(OWNER, owner)
        assert not owner_alive()
        with pytest.raises(Terminated):
            check_owner()


def test_a_job_on_another_machine_does_not_judge_its_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A SLURM node or a Ray worker cannot see the command's process: it goes on."""
    monkeypatch.setenv(OWNER, f"not-{socket.gethostname()}:{_gone_pid()}")
    assert owner_alive()
    check_owner()


def test_the_command_names_its_machine_and_pid(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(OWNER, raising=False)
    claim_ownership()
    host, _, pid = os.environ[OWNER].rpartition(":")
    assert host == socket.gethostname() and int(pid) == os.getpid()
    assert owner_alive()


RUN_THEN_LEAVE = """
import subprocess, sys
from nslb_cli.cli import main

main(["--version"])  # a command run in-process: this process owns it
subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
"""


def test_a_command_started_by_a_process_that_ran_one_is_its_own_owner(tmp_path: Path) -> None:
    """It inherits NSLB_OWNER_PID naming that process, which then ends: the new command
    owns its jobs itself and runs to its end (its jobs neither stop nor exit silently)."""
    from tests.helpers.cli import NSLB

    command = [NSLB, "run", "agent=umts", "agent.num_particles=500", "run.n_seeds=8",
               "env.horizon=2000", "run.batch_size=1", "hydra.run.dir=r"]  # fmt: skip
    subprocess.run(
        [sys.executable, "-c", RUN_THEN_LEAVE, *command], cwd=tmp_path, check=True, timeout=60
    )
    deadline = time.monotonic() + 60
    while len(list((tmp_path / "r").glob("seed=*.csv"))) < 8 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert len(list((tmp_path / "r").glob("seed=*.csv"))) == 8
