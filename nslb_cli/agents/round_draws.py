"""Per-round random draws served from blocks of rounds.

``BatchRNG`` keeps one generator per seed, so a draw for the batch is a
Python call to every run's generator: per round, that loop can cost more than the agent's
arithmetic. ``RoundDraws`` draws ``BLOCK`` rounds at once from each generator and
hands them out one round at a time. numpy's generators fill an array in order, so each run
gets exactly the numbers it would get drawing round by round (and its numbers still do not
depend on its batch), provided the agent draws nothing else from its stream.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

#: Rounds drawn at once: ``R × BLOCK × prod(shape)`` numbers are held.
BLOCK = 256


class RoundDraws:
    """The same kind of draw every round, e.g. ``RoundDraws(rng.random)`` for one uniform per
    run, ``RoundDraws(rng.normal, (d,))`` for a standard normal vector per run.

    Args:
        draw: a ``BatchRNG`` method taking the per-run shape and returning
            ``(R, *shape)``.
        shape: the per-run shape of one round's draw.
    """

    def __init__(
        self, draw: Callable[[tuple[int, ...]], np.ndarray], shape: tuple[int, ...] = ()
    ) -> None:
        self._draw = draw
        self._shape = shape
        self._block = np.empty((0, 0, *shape))
        self._next = 0

    def next(self) -> np.ndarray:
        """This round's draws, ``(R, *shape)``."""
        if self._next == self._block.shape[1]:
            self._block = self._draw((BLOCK, *self._shape))
            self._next = 0
        self._next += 1
        return self._block[:, self._next - 1]
