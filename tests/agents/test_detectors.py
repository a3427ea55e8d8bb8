"""Cao et al.'s mean-shift detector: false-alarm rate, detection delay, per-arm windows."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import norm

from nslb_cli.agents.detectors import MeanShiftDetector, cao_threshold
from nslb_cli.bandit.problem import Problem
from tests.helpers.reference_kernels import mean_shift_update

SIGMA, TAU = 0.5, 100
PAPER = Problem(n_arms=5, n_states=5, horizon=2000, sigma=SIGMA, n_runs=1)


def false_alarms(threshold: float, runs: int, blocks: int, seed: int) -> int:
    """Alarms on a stationary N(0.3, sigma^2) stream, testing disjoint windows only.

    Each run sees ``blocks`` disjoint windows of ``tau`` rewards (the detector is reset after
    each), so the ``runs * blocks`` tests are independent.
    """
    rng = np.random.default_rng(seed)
    detector = MeanShiftDetector(runs, 1, TAU, threshold)
    arms = np.zeros(runs, dtype=np.int64)
    alarms = 0
    for _ in range(blocks):
        for i in range(TAU):
            fired = mean_shift_update(detector, arms, 0.3 + SIGMA * rng.standard_normal(runs))
            assert i == TAU - 1 or not fired.any(), "no test before the window is full"
        alarms += int(fired.sum())
        detector.reset(np.ones(runs, dtype=bool))
    return alarms


@pytest.mark.parametrize(
    "threshold",
    [2.0 * SIGMA * np.sqrt(TAU), cao_threshold(PAPER, TAU)],
    ids=["two-sd", "paper"],
)
def test_false_alarm_rate_matches_the_threshold(threshold: float) -> None:
    # On a stationary stream the statistic is N(0, tau sigma^2): P(alarm) = 2 Phi(-b / (sigma
    # sqrt(tau))) per test. The count over M independent tests is Binomial(M, p); allow 4
    # standard errors sqrt(M p (1 - p)) (two-sd: p = 0.0455, 182 ± 53; paper: p = 0.0031,
    # 12.4 ± 14).
    runs, blocks = 1000, 4
    tests = runs * blocks
    p = 2 * norm.sf(threshold / (SIGMA * np.sqrt(TAU)))
    count = false_alarms(threshold, runs, blocks, seed=1)
    assert abs(count - tests * p) <= 4 * np.sqrt(tests * p * (1 - p))


def test_paper_threshold_value() -> None:
    # b = sigma sqrt(tau log(2 K n^2) / 2) = 0.5 sqrt(50 log(4e7)).
    assert cao_threshold(PAPER, TAU) == pytest.approx(0.5 * np.sqrt(50 * np.log(4e7)))


def test_fires_within_half_a_window_after_a_large_mean_shift() -> None:
    # A shift of delta = 1 after 200 stationary rewards. With k <= tau/2 shifted rewards in
    # the window the statistic has mean k delta and sd sigma sqrt(tau) = 5; at k = tau/2 its
    # mean 50 is 7 sd above b = 14.8, so a run misses with probability Phi(-7) ~ 1e-12 and
    # all 500 runs must fire within tau/2 rewards of the shift (not reset on earlier alarms).
    runs, before, delta = 500, 200, 1.0
    rng = np.random.default_rng(2)
    detector = MeanShiftDetector(runs, 1, TAU, cao_threshold(PAPER, TAU))
    arms = np.zeros(runs, dtype=np.int64)
    for _ in range(before):
        mean_shift_update(detector, arms, SIGMA * rng.standard_normal(runs))
    delay = np.full(runs, -1)
    for k in range(1, TAU // 2 + 1):
        fired = mean_shift_update(detector, arms, delta + SIGMA * rng.standard_normal(runs))
        delay[(delay < 0) & fired] = k
    assert np.all(delay > 0), f"{np.sum(delay < 0)} runs missed the shift"
    # and it is not instantaneous: at k = 1 the statistic has mean 1, far below b.
    assert np.median(delay) > 5


def test_windows_are_per_arm_and_reset_per_run() -> None:
    # Arm 0 always pays 0 and arm 1 always pays 10, pulled alternately: each arm's own window
    # is constant, so nothing fires although the stream of rounds jumps every round.
    detector = MeanShiftDetector(2, 2, 4, threshold=0.5)
    for t in range(20):
        arms = np.full(2, t % 2)
        assert not mean_shift_update(detector, arms, 10.0 * arms).any()
    # A jump on arm 1 in run 0 fires at once: its window is 10 10 | 10 20, a shift of 10 > 0.5.
    fired = mean_shift_update(detector, np.array([1, 1]), np.array([20.0, 10.0]))
    assert fired.tolist() == [True, False]
    detector.reset(fired)
    assert detector.counts[0].tolist() == [0, 0] and detector.counts[1].tolist() == [10, 11]
    # After the reset run 0 tests nothing until arm 1 has a full window again.
    for _ in range(3):
        assert not mean_shift_update(detector, np.array([1, 1]), np.array([-50.0, 10.0]))[0]


def test_window_must_split_in_halves() -> None:
    with pytest.raises(ValueError, match="even"):
        MeanShiftDetector(1, 1, 5, 1.0)
