"""Requests to stop: Ctrl-C (``KeyboardInterrupt``) and SIGTERM (:class:`Terminated`).

The ``nslb`` command turns SIGTERM (a cluster's preemption, ``kill``) into
:class:`Terminated`, raised like Ctrl-C's ``KeyboardInterrupt`` wherever the process is; both
unwind every job (results are written whole or not at all, so what is on disk resumes
byte-identically) up to the command, which ends with one line. Code that catches every
error of a plugin or a job lets them through (:func:`stopped_by`).
"""

from __future__ import annotations


class Terminated(BaseException):
    """The process was asked to stop (SIGTERM), or its command has gone.

    A ``BaseException``, like ``KeyboardInterrupt``: nothing that catches ``Exception``
    (a sweep's record of failed jobs, say) swallows it.
    """


def stopped_by(error: BaseException) -> BaseException | None:
    """The request to stop behind ``error`` — a ``KeyboardInterrupt`` or :class:`Terminated`,
    itself or among its causes (compiled code reports one as ``SystemError``) — or None."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        if isinstance(current, KeyboardInterrupt | Terminated):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None
