"""How fast an agent finds each change of the latent state (docs/design.md §6).

Rounds are numbered ``1 … n`` as in the result files. A *true change* is a round ``c`` whose
state differs from the previous round's. A *detection* is the round ``d`` whose observation
made the agent's detector fire (the agent restarts from round ``d + 1``). A detection is the
true detection of change ``c_i`` (the last change at or before ``d``) when ``c_i`` has not
been detected yet and ``d`` comes before both the next change and ``c_i +``
``DETECTION_WINDOW``; its delay is ``d - c_i`` (0: found in the change's first round).
Every other detection is a false alarm; a change without a true detection is missed.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

DETECTION_WINDOW = 1000
"""The most rounds after a change in which a detection still counts as finding it: the
segments of the field's piecewise problems (Besson et al., 2022) and, on average, 5 of the
synthetic problem's are as long; a detector that needs longer has missed the change."""


@dataclass(frozen=True)
class Scored:
    """The detections of one run matched to its true changes."""

    delays: list[int]  # one per detected change, in the order of the changes
    false_alarms: int
    missed: int


def change_rounds(states: np.ndarray) -> list[int]:
    """The true change rounds (1-based) of one run's state path ``states`` (``(n,)``)."""
    return [int(i) + 2 for i in np.flatnonzero(states[1:] != states[:-1])]


def score(
    detections: Sequence[int], changes: Sequence[int], window: int = DETECTION_WINDOW
) -> Scored:
    """Match ``detections`` to ``changes`` (both ascending rounds; module docstring)."""
    delays: list[int] = []
    found: set[int] = set()
    for d in detections:
        i = bisect_right(changes, d) - 1
        end = changes[i] + window if i >= 0 else 0
        if i + 1 < len(changes):
            end = min(end, changes[i + 1])
        if i >= 0 and i not in found and d < end:
            found.add(i)
            delays.append(d - changes[i])
    false_alarms = len(detections) - len(delays)
    return Scored(delays, false_alarms, len(changes) - len(found))


class AlarmLog:
    """The rounds in which each run's detection counter (an agent's
    ``detection_counts``) went up, noted by the round loop."""

    def __init__(self, counts: np.ndarray) -> None:
        self.last = np.array(counts, copy=True)
        self.rounds: list[list[int]] = [[] for _ in range(len(self.last))]

    @classmethod
    def from_flags(cls, detected: np.ndarray) -> AlarmLog:
        """The log of ``detected`` ``(R, n)``: whether each run detected in each round
        (the JAX engine's record)."""
        log = cls(np.zeros(len(detected)))
        log.rounds = [(np.flatnonzero(row) + 1).tolist() for row in detected]
        return log

    def note(self, t: int, counts: np.ndarray) -> None:
        """Note the runs whose counter changed in round ``t`` (0-based, as in the code)."""
        fired = np.flatnonzero(counts != self.last)
        for r in fired:
            self.rounds[r].append(t + 1)
        self.last[fired] = counts[fired]

    def summary(self, states: np.ndarray | None) -> dict[str, np.ndarray]:
        """Per run: ``detection_rounds`` (lists); with the true state paths ``states``
        (``(R, n)``; ``None``: a world without a discrete latent path, which has no change
        points to match) also ``detection_delays`` (lists), ``false_alarms``,
        ``missed_changes`` and ``mean_delay`` (``None`` where no change was detected)."""
        R = len(self.rounds)
        rounds, delays, mean = np.empty(R, object), np.empty(R, object), np.empty(R, object)
        for r, found in enumerate(self.rounds):  # one by one: equal lengths stay lists
            rounds[r] = list(found)
        if states is None:
            return {"detection_rounds": rounds}
        false_alarms, missed = np.zeros(R, np.int64), np.zeros(R, np.int64)
        for r in range(R):
            scored = score(self.rounds[r], change_rounds(states[r]))
            delays[r] = scored.delays
            mean[r] = float(np.mean(scored.delays)) if scored.delays else None
            false_alarms[r], missed[r] = scored.false_alarms, scored.missed
        return {
            "detection_rounds": rounds,
            "detection_delays": delays,
            "false_alarms": false_alarms,
            "missed_changes": missed,
            "mean_delay": mean,
        }
