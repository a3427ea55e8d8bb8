"""Code that may hang or end its process (a plugin's, a job's) run in a process of its own.

A child that outlasts its time limit, ends without an answer or raises ``SystemExit`` raises
``Ended`` in the parent, naming the child's ``step``.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable
from multiprocessing import Pipe
from multiprocessing.connection import Connection
from typing import Any, NoReturn, TypeVar

from nslb_cli.common.errors import describe_error
from nslb_cli.common.stopping import stopped_by

T = TypeVar("T")
WATCH_SECONDS = 1.0
"""How often a process that ends with another looks for it (``end_when``)."""


class Ended(RuntimeError):
    """Code run apart hung, ended its process, or raised ``SystemExit``: one line."""


_child: list[Any] = []
"""In a child: its channel to the parent and the name of its current step."""
_unforkable: list[str] = []
"""Why this process can no longer fork a working child (JAX's compiler threads: a child that
compiles waits forever on a lock a thread of the parent held)."""


def forbid_forks(reason: str) -> None:
    """From now on ``run_apart`` refuses, in one line naming ``reason``, rather than
    fork a child that could hang (the JAX engine calls this when it first compiles)."""
    if not _unforkable:
        _unforkable.append(reason)


def step(name: str) -> None:
    """Name the step a child starts (its time limit starts now); nothing outside a child."""
    if _child:
        _child[1] = name
        _child[0].send(("step", name, ""))


def run_apart(function: Callable[[], T], name: str, seconds: float | None = None) -> T:
    """``function()`` run in a child process; ``name`` names its first step, ``seconds``
    limits every step (``None``: no limit). Raises ``Ended`` as the module says."""
    if _unforkable:
        raise Ended(
            f"{name} cannot run in a process of its own after {_unforkable[0]} in this one: "
            "run it in a command of its own (a sweep's plugin jobs apart from its JAX jobs)"
        )
    reader, writer = Pipe(duplex=False)
    sys.stdout.flush()  # else the child would print what the parent has buffered, again
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        reader.close()
        _run_child(function, name, writer)
    writer.close()
    try:
        return _answer(reader, pid, name, seconds)
    except BaseException as err:
        if stopped_by(err) is not None and _alive(pid):
            os.kill(pid, signal.SIGTERM)  # the child unwinds, then the parent stops
            os.waitpid(pid, 0)
        raise
    finally:
        reader.close()


def _run_child(function: Callable[[], Any], name: str, writer: Connection) -> NoReturn:
    """In the child: run ``function`` and send its value or exception; end then, whatever
    happens (never return into the parent's code), or as soon as the parent has gone."""
    status = 1
    try:
        _child[:] = [writer, name]
        parent = os.getppid()
        end_when(lambda: os.getppid() != parent, "nslb-apart")
        answer = _outcome(function)
        sys.stdout.flush()
        sys.stderr.flush()
        writer.send(answer)
        status = 0
    finally:
        os._exit(status)


def _outcome(function: Callable[[], Any]) -> tuple[str, Any, str]:
    """What the child sends: ``function``'s value, or its exception and traceback."""
    try:
        return ("value", function(), "")
    except BaseException as err:
        where = "".join(traceback.format_exception(type(err), err, err.__traceback__))
        if stopped_by(err) is None and not isinstance(err, Exception):
            err, where = Ended(f"{_child[1]} raised {describe_error(err)}"), ""
        return ("error", _portable(err, describe_error), where)


def end_when(gone: Callable[[], bool], name: str) -> None:
    """End this process (status 143, as SIGTERM would), writing nothing more, within
    ``WATCH_SECONDS`` of ``gone()`` answering true: a thread ``name`` asks it."""

    def watch() -> None:
        while not gone():
            time.sleep(WATCH_SECONDS)
        os._exit(143)

    threading.Thread(target=watch, name=name, daemon=True).start()


def _portable(err: BaseException, describe: Callable[[BaseException], str]) -> tuple[Any, ...]:
    """``err`` as it can travel to the parent (``_rebuilt`` there): itself, else its
    class, arguments and attributes, else its one line (``describe``) in a RuntimeError."""
    for sent in ((err,), (type(err), err.args, vars(err))):
        with contextlib.suppress(Exception):
            _rebuilt(*pickle.loads(pickle.dumps(sent)))
            return sent
    return (RuntimeError(describe(err)),)


def _rebuilt(*sent: Any) -> Any:
    """The exception ``_portable`` sent; one sent as its class, ``args`` and attributes
    is made without its ``__init__`` (``ConfigError(key, message)``'s is not its ``args``)."""
    if len(sent) == 1:
        return sent[0]
    kind, args, state = sent
    error = kind.__new__(kind, *args)
    error.args = args
    error.__dict__.update(state)
    return error


class ChildTraceback(Exception):
    """Where a child's exception was raised: the cause of the exception raised again."""

    def __str__(self) -> str:
        return f"in the child process:\n{self.args[0]}"


def _answer(reader: Connection, pid: int, name: str, seconds: float | None) -> Any:
    """The child's value (its exception raised); ``Ended`` if it gives none."""
    while True:
        if not reader.poll(seconds):
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            raise Ended(f"{name} did not finish within {seconds:g} s")
        try:
            kind, payload, where = reader.recv()
        except EOFError:
            raise Ended(f"{name} {_death(os.waitpid(pid, 0)[1])}") from None
        if kind == "step":
            name = payload
            continue
        os.waitpid(pid, 0)
        if kind == "error":
            error = _rebuilt(*payload)
            error.__cause__ = ChildTraceback(where) if where else None
            raise error
        return payload


def _death(status: int) -> str:
    """How a child that sent no answer ended, from its wait status."""
    if os.WIFSIGNALED(status):
        killer = signal.Signals(os.WTERMSIG(status))
        why = " (the out-of-memory killer, or kill -9)" if killer == signal.SIGKILL else ""
        return f"was killed by {killer.name}{why}"
    return f"ended its process with status {os.waitstatus_to_exitcode(status)} before it finished"


def _alive(pid: int) -> bool:
    """Whether child ``pid`` still runs (a child that has ended is reaped)."""
    try:
        return os.waitpid(pid, os.WNOHANG) == (0, 0)
    except ChildProcessError:
        return False
