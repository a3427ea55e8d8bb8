"""CD-UCB and CD-TS: per-arm bandit algorithms restarted by a change detector (section 5).

The structure is Cao et al. (2019)'s M-UCB. Per run the agent keeps, since its last restart
``r``, each arm's pull count ``n_a`` and reward sum ``Y_a``, and a
``MeanShiftDetector`` on each arm's last ``tau`` rewards. Round
``t`` (0-based):

1. forced uniform exploration: if ``gamma > 0`` and ``k = (t - r) mod floor(K / gamma) < K``,
   pull arm ``k``; otherwise pull the base algorithm's arm (below);
2. observe ``R_t``; if the detector fires, restart globally, as M-UCB does: every arm's
   statistics and every arm's detector window are cleared and ``r = t + 1``.

Base algorithms, with ``sigma = Problem.sigma`` and ``m = t - r + 1`` (docs/design.md §4.5):

* ``cd_ucb``: UCB1, ``A_t = argmax_a Y_a / n_a + sigma sqrt(8 log m / n_a)`` (unpulled arms
  first, lowest index first).
* ``cd_ts``: Thompson sampling from the default prior
  (``sample_given_sums``), ``A_t = argmax_a theta_a``.

Defaults: ``tau = 100``, ``threshold = sigma sqrt(tau log(2 K n^2) / 2)``
(``cao_threshold``), ``gamma = 0``.

The compiled calls do the arithmetic of their numpy statements in ``tests/helpers/
reference_kernels.py`` in the same order: window halves summed in numpy's pairwise order
(``plan_sum``), ``8 log m`` read from a table numpy computes, and CD-TS drawing ``K``
numbers per run and round, also in rounds of forced exploration.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from nslb_cli.agents.base import Style
from nslb_cli.agents.detectors import MeanShiftDetector, cao_threshold
from nslb_cli.agents.restarting import Restarting
from nslb_cli.agents.switching_ts import thompson_arms
from nslb_cli.agents.tuning import cao_exploration, check_exploration, exploration_period, given_or
from nslb_cli.bandit.numerics import pairwise_plan
from nslb_cli.bandit.problem import OfflineModel, Problem
from nslb_cli.bandit.rng import BatchRNG
from nslb_cli.common import validators as check
from nslb_cli.compiled.jit import inline, jit


@dataclass
class RestartedParams(check.Section):
    """Parameters shared by ``cd_ucb`` and ``cd_ts``; ``None`` means computed (module doc)."""

    name: str = "cd_ucb"
    # detector window: an arm's last tau rewards, split in halves (even)
    tau: int = 100
    # detector threshold b: fire when |sum(last half) - sum(first half)| > b; null: the paper's
    # sigma * sqrt(tau * log(2 K n^2) / 2)
    threshold: float | None = None
    # forced uniform exploration fraction in [0, 1] (0: none, the default); null: Cao et al.'s
    # sqrt(K L log n / n), L = 1 + p n expected segments
    gamma: float | None = 0.0

    def validate(self) -> None:
        check.even_window(self.tau, "tau")
        if self.threshold is not None:  # no upper bound: only compared with, never overflowed
            check.positive(self.threshold, "threshold")
        check_exploration(self.gamma, "gamma")


@dataclass
class CDUCBParams(RestartedParams):
    name: str = "cd_ucb"


@dataclass
class CDTSParams(RestartedParams):
    name: str = "cd_ts"


@inline
def block_sum(values: np.ndarray, start: int, n: int) -> float:
    """numpy's pairwise sum of ``n <= 128`` numbers from ``values[start]``: one accumulator
    from ``0.0`` if ``n < 8``; else eight, ``s_j = x_j + x_{j+8} + ...`` over the first
    ``8 floor(n / 8)`` numbers, ``((s_0 + s_1) + (s_2 + s_3)) + ((s_4 + s_5) + (s_6 + s_7))``,
    then the last ``n mod 8`` numbers added one by one."""
    if n < 8:
        total = 0.0
        for i in range(start, start + n):
            total += values[i]
        return total
    s0, s1, s2, s3 = values[start], values[start + 1], values[start + 2], values[start + 3]
    s4, s5, s6, s7 = values[start + 4], values[start + 5], values[start + 6], values[start + 7]
    end = start + n - n % 8
    for i in range(start + 8, end, 8):
        s0 += values[i]
        s1 += values[i + 1]
        s2 += values[i + 2]
        s3 += values[i + 3]
        s4 += values[i + 4]
        s5 += values[i + 5]
        s6 += values[i + 6]
        s7 += values[i + 7]
    total = ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))
    for i in range(end, start + n):
        total += values[i]
    return total


@inline
def plan_sum(values: np.ndarray, start: int, plan: np.ndarray, partial: np.ndarray) -> float:
    """``values[start : start + n]`` summed as ``np.sum`` sums it: the postfix program ``plan``
    (``pairwise_plan``) run with ``block_sum`` for its
    blocks; ``partial`` (``len(plan)``) holds the sums in progress."""
    top = 0
    for k in range(len(plan)):
        if plan[k, 0] >= 0:
            partial[top] = block_sum(values, start + plan[k, 0], plan[k, 1])
            top += 1
        else:
            top -= 1
            partial[top - 1] += partial[top]
    return partial[0]


@inline
def window_shift(
    ring: np.ndarray, count: int, ordered: np.ndarray, plan: np.ndarray, partial: np.ndarray
) -> float:
    """``sum_{i > tau/2} Y_i - sum_{i <= tau/2} Y_i`` of the last ``tau`` rewards in ``ring``
    (slot ``count mod tau`` the oldest), each half by ``plan_sum``; ``ordered`` receives
    the window, oldest first."""
    tau = len(ring)
    oldest = count % tau
    ordered[: tau - oldest] = ring[oldest:]
    ordered[tau - oldest :] = ring[:oldest]
    half = tau // 2
    return plan_sum(ordered, half, plan, partial) - plan_sum(ordered, 0, plan, partial)


@jit
def restarted_update(
    t: int,
    actions: np.ndarray,
    rewards: np.ndarray,
    threshold: float,
    plan: np.ndarray,
    pulls: np.ndarray,
    sums: np.ndarray,
    window: np.ndarray,
    counts: np.ndarray,
    restart: np.ndarray,
    detections: np.ndarray,
) -> None:
    """``DetectorRestarted.update``, compiled, in place (step 2): the pulled arm's ``n_a``,
    ``Y_a`` and ring buffer; once it holds ``tau`` rewards, ``|`` ``window_shift`` ``| >
    threshold`` restarts the run (``restart[r] = t + 1``, ``detections[r] += 1``)."""
    tau = window.shape[2]
    ordered = np.empty(tau)
    partial = np.empty(len(plan))
    for r in range(len(actions)):
        a = actions[r]
        pulls[r, a] += 1.0
        sums[r, a] += rewards[r]
        count = counts[r, a]
        window[r, a, count % tau] = rewards[r]
        count += 1
        counts[r, a] = count
        if count < tau:
            continue
        if abs(window_shift(window[r, a], count, ordered, plan, partial)) > threshold:
            pulls[r, :] = 0.0
            sums[r, :] = 0.0
            counts[r, :] = 0
            restart[r] = t + 1
            detections[r] += 1


@inline
def forced_arm(t: int, restart: int, period: int, n_arms: int) -> int:
    """The arm of forced exploration in round ``t`` of a run restarted at ``restart``:
    ``k = (t - restart) mod period`` if ``period > 0`` and ``k < K``, else ``-1`` (none)."""
    if period > 0:
        phase = (t - restart) % period
        if phase < n_arms:
            return phase
    return -1


@jit
def ucb_choice(
    t: int,
    restart: np.ndarray,
    period: np.ndarray,
    pulls: np.ndarray,
    sums: np.ndarray,
    sigma: float,
    log_rounds: np.ndarray,
) -> np.ndarray:
    """``CDUCB.act``, compiled: the ``forced_arm``, else the first arm of largest
    UCB index, ``8 log m = log_rounds[m - 1]``; ``(R,)``."""
    R, K = pulls.shape
    arms = np.zeros(R, dtype=np.int64)
    for r in range(R):
        arms[r] = forced_arm(t, restart[r], period[r], K)
        if arms[r] >= 0:
            continue
        level = log_rounds[t - restart[r]]
        best = -np.inf
        for a in range(K):
            if pulls[r, a] == 0:
                index = np.inf
            else:
                index = sums[r, a] / pulls[r, a] + sigma * np.sqrt(level / pulls[r, a])
            if index > best:
                best = index
                arms[r] = a
            if best == np.inf:
                break
    return arms


@jit
def thompson_choice(
    t: int,
    restart: np.ndarray,
    period: np.ndarray,
    pulls: np.ndarray,
    sums: np.ndarray,
    family: int,
    sigma: float,
    generators: Any,
) -> np.ndarray:
    """``CDTS.act``, compiled: per run the ``forced_arm``, else the Thompson arm of
    ``thompson_arms`` (drawn in every run, forced or not);
    ``(R,)``."""
    arms = thompson_arms(family, sigma, pulls, sums, 0.0, 0.0, generators)
    K = pulls.shape[1]
    for r in range(len(arms)):
        forced = forced_arm(t, restart[r], period[r], K)
        if forced >= 0:
            arms[r] = forced
    return arms


class DetectorRestarted(Restarting):
    """A per-arm bandit algorithm with forced exploration, restarted by a change detector."""

    fixed_arms = True
    detector: MeanShiftDetector

    def __init__(
        self, params: RestartedParams, problem: Problem, model: OfflineModel, rng: BatchRNG
    ) -> None:
        R, K = problem.n_runs, problem.n_arms
        threshold = params.threshold
        if threshold is None:
            threshold = cao_threshold(problem, params.tau)
        detector = MeanShiftDetector(R, K, params.tau, threshold)
        super().__init__(params, problem, model, rng, detector)
        gamma = given_or(params.gamma, cao_exploration(problem, model))
        self.period = exploration_period(gamma, K)
        self.pulls = np.zeros((R, K))
        self.sums = np.zeros((R, K))
        self.plan = pairwise_plan(params.tau // 2)  # the order of each half's sum

    def update(
        self, t: int, contexts: np.ndarray | None, actions: np.ndarray, rewards: np.ndarray
    ) -> None:
        """Compiled: ``restarted_update``."""
        restarted_update(
            t,
            np.asarray(actions, dtype=np.int64),
            np.asarray(rewards, dtype=float),
            float(self.detector.threshold),
            self.plan,
            self.pulls,
            self.sums,
            self.detector.rewards,
            self.detector.counts,
            self.restart,
            self.detections,
        )

    def forget(self, runs: np.ndarray) -> None:
        self.pulls[runs] = 0.0
        self.sums[runs] = 0.0


class CDUCB(DetectorRestarted):
    """CD-UCB: UCB1 restarted by the mean-shift detector of Cao et al. (2019)."""

    display_name = "CD-UCB"
    legend_rank = 10
    style = Style("#009E73", "--", "^")

    Params = CDUCBParams

    def __init__(
        self, params: RestartedParams, problem: Problem, model: OfflineModel, rng: BatchRNG
    ) -> None:
        super().__init__(params, problem, model, rng)
        self.log_rounds = 8.0 * np.log(np.arange(1, problem.horizon + 1, dtype=float))

    def act(self, t: int, contexts: np.ndarray | None) -> np.ndarray:
        """Compiled: ``ucb_choice``."""
        return ucb_choice(
            t,
            self.restart,
            self.period,
            self.pulls,
            self.sums,
            float(self.problem.sigma),
            self.log_rounds,
        )


class CDTS(DetectorRestarted):
    """CD-TS: Thompson sampling restarted by the mean-shift detector of Cao et al. (2019)."""

    display_name = "CD-TS"
    legend_rank = 20
    style = Style("#CC79A7", "-.", "v")

    Params = CDTSParams

    def act(self, t: int, contexts: np.ndarray | None) -> np.ndarray:
        """Compiled: ``thompson_choice``."""
        return thompson_choice(
            t,
            self.restart,
            self.period,
            self.pulls,
            self.sums,
            int(self.problem.reward_model.kernel[0]),
            float(self.problem.sigma),
            self.rng.typed(),
        )
