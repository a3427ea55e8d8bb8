"""Requests to stop are raised where they arrive, except inside a step that must not be cut."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from nslb_cli.config.stopping import Terminated, forget, held, pending, request


@pytest.fixture(autouse=True)
def _no_requests() -> None:
    forget()


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
