"""Requests to stop are raised where they arrive, except inside a step that must not be cut."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time

import pytest

from nslb_cli.common.stopping import Terminated, held, pending, request


def test_a_request_is_raised_at_once_and_recorded() -> None:
    with pytest.raises(Terminated):
        request(Terminated("now"))
    assert isinstance(pending(), Terminated)


def test_a_request_during_a_held_step_waits_for_its_end() -> None:
    steps = []
    with pytest.raises(KeyboardInterrupt), held():
        request(KeyboardInterrupt())
        steps.append("after the request")
        with held():  # nested: only the outermost block raises
            steps.append("inner")
        steps.append("end of the step")
    assert steps == ["after the request", "inner", "end of the step"]


def test_a_held_step_that_fails_raises_its_own_error() -> None:
    with pytest.raises(ValueError, match="the step's"), held():
        request(Terminated("meanwhile"))
        raise ValueError("the step's")


def test_a_signal_received_by_another_thread_waits_for_the_held_step() -> None:
    """The kernel gives a process's signal to any thread that does not block it; Python
    then runs the handler in the main thread, whichever thread took it."""

    def handler(signum: int, frame: object) -> None:
        request(Terminated(f"signal {signum}"))

    previous = signal.signal(signal.SIGTERM, handler)
    released = threading.Event()
    other = threading.Thread(target=released.wait)
    other.start()
    steps = []
    try:
        with pytest.raises(Terminated), held():
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})  # only `other` takes it
            os.kill(os.getpid(), signal.SIGTERM)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
            deadline = time.monotonic() + 5
            while pending() is None and time.monotonic() < deadline:
                time.sleep(0.001)  # the handler runs between two of these
            steps.append("the step went on")
        assert steps == ["the step went on"] and isinstance(pending(), Terminated)
    finally:
        released.set()
        other.join()
        signal.signal(signal.SIGTERM, previous)


def test_a_request_whose_exception_was_swallowed_is_raised_at_the_next_check() -> None:
    from nslb_cli.common.stopping import check

    check()  # nothing recorded: nothing raised
    with contextlib.suppress(BaseException):  # what a library's catch-all does
        request(Terminated("swallowed"))
    with held():
        check()  # a held step is never cut
    with pytest.raises(Terminated, match="swallowed"):
        check()


def test_the_round_loop_stops_at_a_swallowed_request() -> None:
    """A signal handler's exception lost inside a dependency: the simulation stops anyway."""
    import numpy as np

    from nslb_cli.agents import AGENTS
    from nslb_cli.envs.synthetic import SyntheticParams
    from nslb_cli.runner.config import RunConfig, RunSettings
    from nslb_cli.runner.job import simulate_seeds

    config = RunConfig("x", SyntheticParams(horizon=50), AGENTS["mts"].Params(), RunSettings())
    with pytest.raises(Terminated):
        request(Terminated("lost"))
    with pytest.raises(Terminated, match="lost"):
        simulate_seeds(config, np.arange(2))


def test_a_request_python_could_not_raise_is_not_printed_but_raised_at_the_next_check(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A signal handled while a ctypes callback runs (numba's compiler calls one): Python
    hands the handler's exception to ``sys.unraisablehook``, which prints it with a
    traceback, and goes on. Within requests_unreported, a recorded request is not passed
    on, check() still raises it, and any other error a callback raises is passed on."""
    import ctypes
    import sys

    from nslb_cli.common.stopping import check, requests_unreported

    reported: list[type[BaseException]] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: reported.append(u.exc_type))

    def wrapping() -> None:  # a library that turns whatever it catches into its own error
        try:
            request(Terminated("wrapped"))
        except Terminated as stop:
            raise RuntimeError("the library's own") from stop

    raising = ctypes.CFUNCTYPE(None)(lambda: request(Terminated("in a callback")))
    failing = ctypes.CFUNCTYPE(None)(lambda: 1 / 0)
    with requests_unreported():
        raising()
        with pytest.raises(Terminated, match="in a callback"):
            check()
        ctypes.CFUNCTYPE(None)(wrapping)()
        failing()
    assert reported == [ZeroDivisionError]
    raising()  # outside the block: reported as Python does
    assert reported == [ZeroDivisionError, Terminated]
