"""A signal that cuts the orderly stop of a parallel sweep's workers (cli.process._late) still
kills them: a worker left behind keeps the command's stderr open until it idles out, so a
wrapper reading the output waits minutes after `nslb: terminated`."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from joblib.externals.loky import get_reusable_executor

from nslb_cli.cli import process


def gone(pid: int) -> bool:
    """Whether ``pid`` has ended (exited, or a zombie not yet reaped)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return True
    return state in ("Z", "X")


def all_gone(pids: list[int], within: float = 10.0) -> bool:
    """Whether every one of ``pids`` has ended, waiting up to ``within`` seconds."""
    deadline = time.monotonic() + within
    while not all(gone(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return all(gone(pid) for pid in pids)


def test_the_workers_of_a_parallel_sweep_are_killed_at_once() -> None:
    executor = get_reusable_executor(max_workers=1)
    executor.submit(time.sleep, 0).result()  # a worker is up and idle
    workers = list(executor._processes)
    assert workers and not any(gone(pid) for pid in workers)
    process.kill_workers()
    assert all_gone(workers)
    executor.shutdown(wait=True, kill_workers=True)


def test_a_worker_the_executor_is_already_stopping_is_killed_too() -> None:
    """The signal lands while the executor's own thread stops the workers: it has taken a
    worker out of its table and not yet killed it. That worker is killed all the same (it
    is still this process's child): left alone it would keep the command's stderr open."""
    executor = get_reusable_executor(max_workers=1)
    executor.submit(time.sleep, 0).result()
    pid, worker = executor._processes.popitem()  # taken out, as the stopping thread does
    try:
        assert not gone(pid)
        process.kill_workers()
        assert all_gone([pid])
    finally:  # not worker.is_alive(): once reaped elsewhere, its poll says "running"
        if not gone(pid):
            os.kill(pid, signal.SIGKILL)
        executor.shutdown(wait=True, kill_workers=True)
