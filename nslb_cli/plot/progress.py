"""Progress lines of a long ``nslb plot``: reading thousands of seed files or drawing many
figures takes minutes, and a silent command looks hung; a fast one stays silent, and so does
one whose stderr is no terminal (a log, a test), as ``run.progress``'s default is."""

from __future__ import annotations

import time
from collections.abc import Callable

AFTER_S = 3.0  # seconds of silence before the first line: a fast plot prints none
EVERY_S = 3.0  # seconds between lines at the least


class Progress:
    """``step(verb, done, total, things)`` says ``read 4,000 of 9,000 seed files`` through
    ``say``: nothing in the first ``after`` seconds since it was made, then at most one line
    every ``every`` seconds (``clock``: seconds, injectable for tests); never unless
    ``shown``."""

    def __init__(
        self,
        say: Callable[[str], None],
        shown: bool = True,
        after: float = AFTER_S,
        every: float = EVERY_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.say, self.shown, self.after, self.every, self.clock = say, shown, after, every, clock
        self.start = clock()
        self.last: float | None = None

    def step(self, verb: str, done: int, total: int, things: str) -> None:
        """Report ``done`` of ``total`` ``things`` if a line is due."""
        now = self.clock()
        if not self.shown or now - self.start < self.after:
            return
        if self.last is not None and now - self.last < self.every:
            return
        self.last = now
        self.say(f"{verb} {done:,} of {total:,} {things}")
