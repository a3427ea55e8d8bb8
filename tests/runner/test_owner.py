"""A job checks that the command that owns it still runs, where it can see that command."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

from nslb_cli.config.stopping import Terminated
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
