"""Requests to stop: Ctrl-C (``KeyboardInterrupt``) and SIGTERM (``Terminated``).

Once a request is recorded (``request``) every error is that request: a signal in compiled
code can surface as another error or be swallowed. ``held`` guards a step that must not be
cut (blocking the signals would not do: other threads still receive them).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import Any


class Terminated(BaseException):
    """The process was asked to stop (SIGTERM), or its command has gone; a ``BaseException``,
    like ``KeyboardInterrupt``, so that nothing catching ``Exception`` swallows it."""


_requests: list[BaseException] = []
_holds = [0]  # how many held() blocks are open


def request(stop: BaseException) -> None:
    """Record ``stop`` (a ``KeyboardInterrupt`` or ``Terminated``, from a signal
    handler) and raise it, unless a ``held`` block is running: that raises it at its end."""
    _requests.append(stop)
    if _holds[0] == 0:
        raise stop


@contextlib.contextmanager
def held() -> Iterator[None]:
    """Run the block whole: a request to stop made meanwhile is raised once it is done."""
    before = len(_requests)
    _holds[0] += 1
    try:
        yield
    finally:
        _holds[0] -= 1
    if _holds[0] == 0 and len(_requests) > before:
        raise _requests[-1]


def check() -> None:
    """Raise the request to stop recorded last, if any (outside ``held`` blocks), even when a
    library swallowed the handler's exception."""
    if _requests and _holds[0] == 0:
        raise _requests[-1]


def forget() -> None:
    """Forget the requests recorded so far (a new command starts)."""
    _requests.clear()


def pending() -> BaseException | None:
    """The request to stop recorded last, if any (then any error is that request)."""
    return _requests[-1] if _requests else None


def stopped_by(error: BaseException) -> BaseException | None:
    """The request to stop behind ``error`` — a ``KeyboardInterrupt`` or ``Terminated``,
    itself or among its causes, or a request recorded while ``error`` arose — or None."""
    for current in _chain(error):
        if isinstance(current, KeyboardInterrupt | Terminated):
            return current
    return pending()


def _chain(error: BaseException | None) -> Iterator[BaseException]:
    """``error``, then the error it was raised from or during, and so on (each once)."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        yield error
        seen.add(id(error))
        error = error.__cause__ or error.__context__


@contextlib.contextmanager
def requests_unreported() -> Iterator[None]:
    """Within the block, a recorded request to stop that Python could not raise (it calls
    ``sys.unraisablehook``) is not printed; any other such error is, as before."""
    previous = sys.unraisablehook

    def hook(unraisable: Any) -> None:
        if not _recorded_in(unraisable.exc_value):
            previous(unraisable)

    sys.unraisablehook = hook
    try:
        yield
    finally:
        sys.unraisablehook = previous


def _recorded_in(error: BaseException | None) -> bool:
    """Whether ``error``, or an error it was raised from or during, is a recorded request."""
    return any(current is stop for current in _chain(error) for stop in _requests)
