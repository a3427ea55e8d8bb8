"""Change detectors that restart a bandit algorithm, batched over runs.

A detector watches the rewards an agent observes and says, for every run, whether the
reward distribution just changed. It owns no policy: its owner restarts its own statistics
when it fires and then calls :meth:`ChangeDetector.reset` for the runs it restarted.

:class:`MeanShiftDetector` is the detector of Cao et al. (2019) used by the paper's CD-UCB
and CD-TS baselines (section 5.1): per arm, the sum of the arm's last ``tau / 2`` rewards is
compared with the sum of the ``tau / 2`` rewards before them.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from nslb_cli.models import Problem


class ChangeDetector(Protocol):
    """What a restarted agent needs from a detector (every array has a leading runs axis)."""

    def update(self, arms: np.ndarray, rewards: np.ndarray) -> np.ndarray:
        """Record ``(A_t, R_t)`` of every run; return ``(R,)`` bool, True where a change is
        detected this round."""
        ...

    def reset(self, mask: np.ndarray) -> None:
        """Forget everything observed in the runs where ``mask`` (``(R,)`` bool) is True."""
        ...


def cao_threshold(problem: Problem, tau: int) -> float:
    """The paper's threshold ``b = sigma * sqrt(tau * log(2 K n^2) / 2)`` (section 5.1).

    Cao et al. (2019) set ``b = sqrt(w log(2 K T^2) / 2)`` for rewards in ``[0, 1]``; the paper
    scales it by the noise ``sigma``. The statistic below has standard deviation
    ``sigma * sqrt(tau)`` on a stationary stream, so ``b`` is ``sqrt(log(2 K n^2) / 2)``
    standard deviations (2.96 for K = 5, n = 2000: a false-alarm probability of 0.3 % per test).
    """
    return problem.sigma * float(np.sqrt(tau * np.log(2 * problem.n_arms * problem.horizon**2) / 2))


class MeanShiftDetector:
    """Cao et al.'s two-window mean-shift test on each arm's own last ``tau`` rewards.

    After arm ``a`` is pulled and it has at least ``tau`` rewards since the last reset, with
    ``Y_1 .. Y_tau`` its last ``tau`` rewards (oldest first), a change is detected when::

        | sum_{i > tau/2} Y_i  -  sum_{i <= tau/2} Y_i |  >  threshold

    Only the arm pulled in a round is tested in that round.

    Args:
        n_runs: ``R``; n_arms: ``K``.
        tau: window length (even), in observations of one arm.
        threshold: ``b``.
    """

    def __init__(self, n_runs: int, n_arms: int, tau: int, threshold: float) -> None:
        if tau <= 0 or tau % 2:
            raise ValueError(f"tau must be a positive even integer, got {tau}")
        self.tau = tau
        self.threshold = threshold
        self.rewards = np.zeros((n_runs, n_arms, tau))  # ring buffer per (run, arm)
        self.counts = np.zeros((n_runs, n_arms), dtype=np.int64)  # rewards since reset
        self._runs = np.arange(n_runs)
        self._order = np.arange(tau)

    def update(self, arms: np.ndarray, rewards: np.ndarray) -> np.ndarray:
        runs = self._runs
        count = self.counts[runs, arms]
        self.rewards[runs, arms, count % self.tau] = rewards
        count = count + 1
        self.counts[runs, arms] = count
        # The slot written next holds the oldest reward: read the window from there.
        oldest_first = (count[:, None] + self._order) % self.tau
        window = np.take_along_axis(self.rewards[runs, arms], oldest_first, axis=1)
        half = self.tau // 2
        shift = window[:, half:].sum(axis=1) - window[:, :half].sum(axis=1)
        return (count >= self.tau) & (np.abs(shift) > self.threshold)

    def reset(self, mask: np.ndarray) -> None:
        self.counts[mask] = 0
