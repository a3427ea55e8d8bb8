"""Agents restarted by a change detector (CD-UCB, CD-TS, CD-LinUCB, CD-LinTS).

After each round the detector sees what the agent observed; in every run where it fires,
the base algorithm forgets its statistics, the detector starts afresh and the round of the
restart is remembered (forced exploration and confidence widths count from it).
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any

import numpy as np

from nslb_cli.agents.base import Windowed
from nslb_cli.agents.detectors import ChangeDetector
from nslb_cli.bandit.problem import OfflineModel, Problem
from nslb_cli.bandit.rng import BatchRNG


class Restarting(Windowed):
    """Base class: ``restart`` (round after the last detection) and ``detections`` per run."""

    def __init__(
        self,
        params: Any,
        problem: Problem,
        model: OfflineModel,
        rng: BatchRNG,
        detector: ChangeDetector,
    ) -> None:
        super().__init__(params, problem, model, rng)
        self.detector = detector
        self.restart = np.zeros(problem.n_runs, dtype=np.int64)
        self.detections = np.zeros(problem.n_runs, dtype=np.int64)

    @abstractmethod
    def forget(self, runs: np.ndarray) -> None:
        """Reset the base algorithm's statistics where ``runs`` (``(R,)`` bool) is True."""

    def restart_where(self, fired: np.ndarray, t: int) -> None:
        """Restart the runs where the detector ``fired`` after round ``t``."""
        if fired.any():
            self.forget(fired)
            self.restart[fired] = t + 1
            self.detections += fired
            self.detector.reset(fired)

    def summary(self) -> dict[str, np.ndarray]:
        return {"detections": self.detections}

    def detection_counts(self) -> np.ndarray:
        return self.detections
