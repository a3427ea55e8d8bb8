"""Change detectors that restart a bandit algorithm, batched over runs.

A detector watches the rewards an agent observes and says, for every run, whether the
reward distribution just changed. It owns no policy: its owner restarts its own statistics
when it fires and then calls :meth:`ChangeDetector.reset` for the runs it restarted.

:class:`MeanShiftDetector` is the detector of Cao et al. (2019) used by the paper's CD-UCB
and CD-TS baselines (section 5.1): per arm, the sum of the arm's last ``tau / 2`` rewards is
compared with the sum of the ``tau / 2`` rewards before them.

:class:`LinearShiftDetector` is the paper's adaptation to linear bandits (section 5.2), used
by CD-LinUCB and CD-LinTS: least-squares weights on the last ``tau / 2`` rounds are compared
with those on the ``tau / 2`` rounds before, in the norm of the window's design matrix. It
watches feature vectors rather than arms: its ``update`` takes the pulled arm's features
``X_t[A_t]`` (``(R, d)``).
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from nslb_cli.bandit.problem import Problem
from nslb_cli.common import validators as check


class ChangeDetector(Protocol):
    """What a restarted agent needs from a detector: to forget runs it restarted. The
    detector's test is its owner's business (:meth:`LinearShiftDetector.update`, or CD-UCB's
    and CD-TS's compiled update on :class:`MeanShiftDetector`'s arrays)."""

    def reset(self, mask: np.ndarray) -> None:
        """Forget everything observed in the runs where ``mask`` (``(R,)`` bool) is True."""
        ...


def cao_threshold(problem: Problem, tau: int) -> float:
    """The paper's threshold ``b = sigma * sqrt(tau * log(2 K n^2) / 2)`` (section 5.1).

    Cao et al. (2019) set ``b = sqrt(w log(2 K T^2) / 2)`` for rewards in ``[0, 1]``; the paper
    scales it by the noise ``sigma``. The statistic below has standard deviation
    ``sigma * sqrt(tau)`` on a stationary stream, so ``b`` is ``sqrt(log(2 K n^2) / 2)``
    standard deviations (2.96 for K = 5, n = 2000: a false-alarm probability of 0.3 % per test).
    ``sigma`` is ``Problem.sigma``, the rewards' sub-Gaussian scale: ``1/2`` for Bernoulli
    rewards, whose statistic has standard deviation at most ``sqrt(tau) / 2``, so ``b`` is
    then at least as many standard deviations (half Cao et al.'s value, which is a Hoeffding
    bound for any rewards in ``[0, 1]``).
    """
    return problem.sigma * float(np.sqrt(tau * np.log(2 * problem.n_arms * problem.horizon**2) / 2))


class MeanShiftDetector:
    """Cao et al.'s two-window mean-shift test on each arm's own last ``tau`` rewards.

    After arm ``a`` is pulled and it has at least ``tau`` rewards since the last reset, with
    ``Y_1 .. Y_tau`` its last ``tau`` rewards (oldest first), a change is detected when::

        | sum_{i > tau/2} Y_i  -  sum_{i <= tau/2} Y_i |  >  threshold

    Only the arm pulled in a round is tested in that round.

    ``mean_shift_update`` in ``tests/helpers/reference_kernels.py`` states the test in numpy.
    CD-UCB and CD-TS run it compiled, on this detector's arrays, in the same order of
    additions (each half summed as ``np.sum`` sums it), with their own update and restart in
    the same call (:func:`~nslb_cli.agents.changepoint.restarted_update`).

    Args:
        n_runs: ``R``; n_arms: ``K``.
        tau: window length (even), in observations of one arm.
        threshold: ``b``.

    Attributes:
        rewards: ``(R, K, tau)`` each arm's last rewards, a ring buffer: the reward number
            ``c`` since the reset (from 0) in slot ``c mod tau``.
        counts: ``(R, K)`` int64, the rewards of each arm since the run's last reset.
    """

    def __init__(self, n_runs: int, n_arms: int, tau: int, threshold: float) -> None:
        check.even_window(tau, "tau")
        self.tau = tau
        self.threshold = threshold
        self.rewards = np.zeros((n_runs, n_arms, tau))  # ring buffer per (run, arm)
        self.counts = np.zeros((n_runs, n_arms), dtype=np.int64)  # rewards since reset

    def reset(self, mask: np.ndarray) -> None:
        self.counts[mask] = 0


DETECTOR_RIDGE = 1e-3
"""Ridge added to each half-window Gram matrix of :class:`LinearShiftDetector`.

Only there to keep the solve defined when a half has not spanned every direction (e.g. an arm
not pulled in a half, with one-hot features): such a direction's weight is shrunk to 0. It is
small against a Gram matrix built from ``tau / 2`` feature vectors of norm about one, so the
estimates are least squares, as in the paper, wherever the data identify them. A ridge of 1
would be a strong prior on the 20-dimensional MovieLens factors: on ML-100K (8 seeds,
about 6 true changes per run) it cut CD-LinUCB's detections from about 10 to 0.25 per run.
"""


class LinearShiftDetector:
    """The paper's linear change detector (section 5.2), over the last ``tau`` rounds of a run.

    With ``(x_i, y_i)``, ``i = 1 .. tau`` (oldest first), the pulled arm's features and reward
    in the last ``tau`` rounds since the last reset, ``A' = sum_{i <= tau/2} x_i x_i'`` and
    ``A = sum_{i > tau/2} x_i x_i'``::

        W' = (A' + rho I)^-1 sum_{i <= tau/2} x_i y_i      (the older half)
        W  = (A  + rho I)^-1 sum_{i >  tau/2} x_i y_i      (the newest half)
        Sigma = A + A'
        fire when  ||W - W'||_Sigma = sqrt((W - W')' Sigma (W - W')) >= threshold

    with ``rho`` = ``ridge`` (:data:`DETECTOR_RIDGE`). Nothing is tested until the window is
    full. Every round with a full window is tested (windows overlap).

    On a stationary stream ``y = x' w + N(0, sigma^2)`` (and ``rho -> 0``) ``W - W'`` is
    ``N(0, sigma^2 (A^-1 + A'^-1))`` given the features, so the squared statistic is a
    weighted sum of ``chi^2_1`` variables with mean
    ``sigma^2 tr((A^-1 + A'^-1)(A + A')) = sigma^2 (2 d + tr(A^-1 A') + tr(A'^-1 A))``; when the
    halves have similar designs (``A ~ A'``) it is about ``2 sigma chi_d``.

    Computation, per run and round (compiled, run by run:
    :func:`~nslb_cli.agents.linear_kernels.record_round`): ``A``, ``A'`` and
    ``sum x_i y_i`` of the newest half are running sums (the round entering added, the round
    leaving subtracted; rounding drifts by about ``1e-16`` per round, far below ``rho``), ``W``
    is a Cholesky solve, and ``W'`` is not solved again: the older half is the newest half of
    ``tau / 2`` rounds ago, whose ``W`` is kept.

    Args:
        n_runs: ``R``; dim: ``d``, the feature dimension.
        tau: window length in rounds (even).
        threshold: ``b`` (the paper tunes ``b = 13`` for ``tau = 100`` on MovieLens).
        ridge: ``rho`` above.

    Attributes:
        statistic: ``(R,)`` ``||W - W'||_Sigma`` of the last update, NaN where not tested.
    """

    def __init__(
        self, n_runs: int, dim: int, tau: int, threshold: float, ridge: float = DETECTOR_RIDGE
    ) -> None:
        check.even_window(tau, "tau")
        self.threshold = threshold
        self.ridge = ridge
        self.features = np.zeros((n_runs, tau, dim))  # ring buffers per run (tau is their length)
        self.rewards = np.zeros((n_runs, tau))
        self.counts = np.zeros(n_runs, dtype=np.int64)  # rounds since reset
        self.gram_new = np.zeros((n_runs, dim, dim))  # A
        self.gram_old = np.zeros((n_runs, dim, dim))  # A'
        self.moment_new = np.zeros((n_runs, dim))  # sum of x_i y_i over the newest half
        self.weights = np.zeros((n_runs, tau // 2, dim))  # W of the last tau / 2 rounds
        self.statistic = np.full(n_runs, np.nan)

    def update(self, features: np.ndarray, rewards: np.ndarray) -> np.ndarray:
        """Record ``(X_t[A_t], R_t)``: ``features`` ``(R, d)``, ``rewards`` ``(R,)``; return
        ``(R,)`` bool, True where a change is detected this round."""
        from nslb_cli.agents.linear_kernels import record_round  # numba: loaded on use

        record_round(
            np.asarray(features, dtype=float),
            np.asarray(rewards, dtype=float),
            self.features,
            self.rewards,
            self.counts,
            self.gram_new,
            self.gram_old,
            self.moment_new,
            self.weights,
            self.ridge,
            self.statistic,
        )
        return self.statistic >= self.threshold

    def reset(self, mask: np.ndarray) -> None:
        """Forget everything observed in the runs where ``mask`` (``(R,)`` bool) is True."""
        self.counts[mask] = 0
        self.gram_new[mask] = 0.0
        self.gram_old[mask] = 0.0
        self.moment_new[mask] = 0.0
