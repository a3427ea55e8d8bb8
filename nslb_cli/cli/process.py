"""The life of an ``nslb`` process: BLAS threads, requests to stop, and the sweep's workers."""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import sys
from collections.abc import Iterator
from typing import Any, NoReturn

from nslb_cli.common.stopping import Terminated, request
from nslb_cli.runner.owner import claim_ownership


@contextlib.contextmanager
def signals(in_process: bool) -> Iterator[None]:
    """Ctrl-C and SIGTERM request a stop while the command runs; afterwards the previous
    handlers are back (``in_process``), or a signal ends the process at once (``_late``)."""
    handlers = {signal.SIGINT: _interrupt, signal.SIGTERM: _terminate}
    previous = {signum: signal.signal(signum, handler) for signum, handler in handlers.items()}
    claim_ownership()
    try:
        yield
    finally:
        for signum, handler in previous.items():  # the command is over: from here, _late
            signal.signal(signum, handler if in_process else _late)
        stop_workers()  # idle workers of a parallel sweep: gone before the command ends


BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")
"""What OpenBLAS reads for its thread count, the first one set winning."""


def one_blas_thread() -> None:
    """One OpenBLAS thread for the command and its processes, unless the user set a count
    (``BLAS_THREADS``); set before numpy loads OpenBLAS, which reads it once.

    nslb's matrix products are small, and OpenBLAS's idle threads spin, taking CPU from sweeps.
    """
    if not any(os.environ.get(name) for name in BLAS_THREADS):
        os.environ[BLAS_THREADS[0]] = "1"


def end(status: object) -> NoReturn:
    """End the process with ``status`` after its exit functions, without Python's shutdown, which
    restores the default signal handlers (a signal then would kill the process without a word)."""
    if isinstance(status, str):
        print(status, file=sys.stderr)
        status = 1
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status if isinstance(status, int) else 0)


def _terminate(signum: int, frame: object) -> None:
    """SIGTERM: unwind like Ctrl-C (see ``nslb_cli.common.stopping``)."""
    request(Terminated(f"signal {signum}"))


def _interrupt(signum: int, frame: object) -> None:
    """SIGINT (Ctrl-C): ``KeyboardInterrupt``, recorded (``nslb_cli.common.stopping``)."""
    request(KeyboardInterrupt())


def _late(signum: int, frame: object) -> None:
    """A signal once the command's work is done: kill the sweep's workers (their orderly stop may
    have been cut), then end at once with the usual line and status."""
    terminated = signum == signal.SIGTERM
    kill_workers()
    sys.stdout.flush()
    print(f"nslb: {'terminated' if terminated else 'interrupted'}", file=sys.stderr, flush=True)
    os._exit(143 if terminated else 130)


def _sweep_executor() -> Any:
    """The worker pool of a parallel sweep (joblib's reusable loky executor), or ``None``."""
    if "joblib" not in sys.modules:
        return None
    from joblib.externals.loky import reusable_executor

    return getattr(reusable_executor, "_executor", None)


def _workers() -> list[int]:
    """The pids of a parallel sweep's workers: the executor's, and every loky worker not reaped
    (the executor drops a worker from its table before killing it)."""
    executor = _sweep_executor()
    pids = set(getattr(executor, "_processes", None) or {})
    if "joblib" in sys.modules:
        import multiprocessing

        from joblib.externals.loky.backend.process import LokyProcess

        children = multiprocessing.active_children()
        pids.update(p.pid for p in children if isinstance(p, LokyProcess) and p.pid)
    return sorted(pids)


def kill_workers() -> None:
    """Kill the worker processes of a parallel sweep at once (SIGKILL, no waiting: safe in
    a signal handler that interrupted ``stop_workers``)."""
    for pid in _workers():
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def stop_workers() -> None:
    """Stop the worker processes of a parallel sweep (joblib's loky workers), so none of
    them simulates or writes after the command has ended, nor holds its output open."""
    executor = _sweep_executor()
    if executor is not None:
        executor.shutdown(wait=True, kill_workers=True)
    kill_workers()  # a worker the executor did not know
