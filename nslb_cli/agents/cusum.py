"""CUSUM-UCB (Liu, Lee & Shroff, AAAI 2018): UCB restarted per arm by a two-sided CUSUM test.

Round ``t`` (``t = 1 .. n``), per run (docs/design.md §4.8):

1. with probability ``alpha`` pull an arm uniformly at random (each arm with probability
   ``alpha / K``); otherwise the UCB arm (the paper's equations (1)-(3)):

       A_t = argmax_a  Y_a / N_a + 2 sigma sqrt(2 log(n_t) / N_a),   n_t = sum_a N_a

   where ``N_a`` and ``Y_a`` are arm ``a``'s pulls and reward sum since its last restart,
   unpulled arms first, ties broken uniformly at random; ``sigma = Problem.sigma``.
2. observe ``y_k``, the ``k``-th reward of ``A_t`` since its restart, and feed the arm's
   two-sided CUSUM (the paper's Algorithm 2, equations (5)-(6)):

       u_0  = (y_1 + ... + y_M) / M                   (after the M-th reward)
       s+_k = (y_k - u_0 - eps) 1{k > M},   s-_k = (u_0 - y_k - eps) 1{k > M}
       g+_k = max(0, g+_{k-1} + s+_k),      g-_k = max(0, g-_{k-1} + s-_k),   g_0 = 0

   An alarm when ``g+_k >= h`` or ``g-_k >= h`` restarts only that arm (the alarm's reward
   is not kept).

``eps`` and ``h`` are for rewards in ``[0, 1]``; the test runs with drift ``2 sigma eps`` and
threshold ``2 sigma h``. Defaults (``null``), with ``Upsilon`` the offline model's expected
changes (``expected_changes``, at least 1): ``h = log(n /
Upsilon)``, ``alpha = sqrt(Upsilon / n · log(n / Upsilon))``, ``epsilon = 0.05``, ``M = 100``
(SMPyBandits' ``CUSUM_IndexPolicy``).

Two uniforms per run and round (exploration, then the uniform arm or the tie-break). Per run
statistics: ``detections``, ``alpha`` and ``threshold``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nslb_cli.agents.base import Agent, Style
from nslb_cli.agents.round_draws import RoundDraws
from nslb_cli.agents.tuning import expected_changes, given_or
from nslb_cli.bandit.problem import OfflineModel, Problem
from nslb_cli.bandit.rng import BatchRNG
from nslb_cli.common import validators as check
from nslb_cli.compiled.jit import jit


@dataclass
class CUSUMUCBParams(check.Section):
    """CUSUM-UCB's parameters; ``None`` means computed from ``n`` and ``Upsilon`` (module doc)."""

    name: str = "cusum_ucb"
    # uniform-exploration probability in [0, 1]; null: sqrt(Upsilon / n * log(n / Upsilon)) (the
    # paper's Corollary 2)
    alpha: float | None = None
    # CUSUM threshold h > 0, for rewards in [0, 1] (used as 2 sigma h); null: log(n / Upsilon)
    threshold: float | None = None
    # CUSUM drift eps >= 0, for rewards in [0, 1] (used as 2 sigma eps): below the smallest change
    # of a mean worth detecting
    epsilon: float = 0.05
    # M >= 1: rewards of an arm after its restart that estimate its mean u_0 before the test starts
    warmup: int = 100

    def validate(self) -> None:
        if self.alpha is not None:
            check.probability(self.alpha, "alpha")
        if self.threshold is not None:
            check.positive(self.threshold, "threshold")
        check.non_negative(self.epsilon, "epsilon")
        check.require(
            self.warmup >= 1, "warmup", f"must be >= 1 (u_0 averages M rewards), got {self.warmup}"
        )


def cusum_defaults(problem: Problem, model: OfflineModel) -> tuple[np.ndarray, np.ndarray]:
    """``(h, alpha)`` per run, ``(R,)``: ``h = log(n / Upsilon)``, ``alpha = sqrt(Upsilon / n
    · log(n / Upsilon))``, with ``Upsilon`` the expected number of changes cut to ``[1, n]``."""
    n = problem.horizon
    upsilon = np.clip(expected_changes(model, n), 1.0, n)
    h = np.log(n / upsilon)
    return h, np.sqrt(upsilon / n * h)


def random_argmax(index: np.ndarray, uniforms: np.ndarray) -> np.ndarray:
    """Per run (row), an arm drawn uniformly among those of largest ``index`` (``+inf``
    included), with ``uniforms`` ``(R,)`` in ``[0, 1)``: the ``floor(u · ties)``-th tied arm
    in index order, so one uniform per run breaks every tie."""
    tied = index == index.max(axis=1, keepdims=True)
    count = tied.sum(axis=1)
    if np.all(count == 1):  # no tie: the argmax (what the general case gives too)
        return tied.argmax(axis=1)
    rank = np.minimum(np.floor(uniforms * count), count - 1).astype(np.int64)
    return (tied & (np.cumsum(tied, axis=1) == (rank + 1)[:, None])).argmax(axis=1)


@jit
def cusum_choice(
    u: np.ndarray, alpha: np.ndarray, pulls: np.ndarray, sums: np.ndarray, width: float
) -> np.ndarray:
    """``CUSUMUCB.act``'s arms, compiled: per run, the uniform arm
    ``min(floor(u[r, 1] K), K - 1)`` if ``u[r, 0] < alpha[r]``, else ``random_argmax``
    of the UCB indices ``sums / pulls + width sqrt(2 log(max(n_t, 1)) / pulls)`` (``+inf``
    for unpulled arms) with ``u[r, 1]``; ``(R,)``."""
    R, K = pulls.shape
    arms = np.zeros(R, dtype=np.int64)
    index = np.empty(K)
    for r in range(R):
        if u[r, 0] < alpha[r]:
            arms[r] = min(int(np.floor(u[r, 1] * K)), K - 1)
            continue
        total = 0.0
        for a in range(K):
            total += pulls[r, a]
        level = 2.0 * np.log(max(total, 1.0))
        best = -np.inf
        for a in range(K):
            if pulls[r, a] > 0:
                index[a] = sums[r, a] / pulls[r, a] + width * np.sqrt(level / pulls[r, a])
            else:
                index[a] = np.inf
            best = max(best, index[a])
        count = 0
        for a in range(K):
            if index[a] == best:
                count += 1
        rank = min(int(np.floor(u[r, 1] * count)), count - 1)
        for a in range(K):
            if index[a] == best:
                if rank == 0:
                    arms[r] = a
                    break
                rank -= 1
    return arms


@jit
def cusum_update(
    actions: np.ndarray,
    rewards: np.ndarray,
    warmup: float,
    eps: float,
    h: np.ndarray,
    pulls: np.ndarray,
    sums: np.ndarray,
    baseline: np.ndarray,
    g_plus: np.ndarray,
    g_minus: np.ndarray,
    detections: np.ndarray,
) -> None:
    """``CUSUMUCB.update``, compiled, in place: the pulled arm's statistics and two-sided
    CUSUM (module docstring, step 2), and its restart on an alarm."""
    for r in range(len(actions)):
        a = actions[r]
        k = pulls[r, a] + 1.0
        total = sums[r, a] + rewards[r]
        pulls[r, a] = k
        sums[r, a] = total
        if k == warmup:
            baseline[r, a] = total / k
        if k <= warmup:
            continue
        step = rewards[r] - baseline[r, a]
        plus = max(0.0, g_plus[r, a] + step - eps)
        minus = max(0.0, g_minus[r, a] - step - eps)
        g_plus[r, a] = plus
        g_minus[r, a] = minus
        if plus >= h[r] or minus >= h[r]:
            pulls[r, a] = 0.0
            sums[r, a] = 0.0
            baseline[r, a] = np.nan
            g_plus[r, a] = 0.0
            g_minus[r, a] = 0.0
            detections[r] += 1


class CUSUMUCB(Agent):
    """CUSUM-UCB (Liu, Lee & Shroff, AAAI 2018): UCB with per-arm two-sided CUSUM restarts.

    Per run and arm since its last restart: ``pulls`` (``N_a``), ``sums`` (``Y_a``),
    ``baseline`` (``u_0``, NaN during the first ``M`` rewards), ``g_plus`` and ``g_minus``.
    """

    display_name = "CUSUM-UCB"
    legend_rank = 110
    style = Style("#8C564B", ":", "h")

    Params = CUSUMUCBParams
    fixed_arms = True

    def __init__(
        self, params: CUSUMUCBParams, problem: Problem, model: OfflineModel, rng: BatchRNG
    ) -> None:
        super().__init__(params, problem, model, rng)
        R, K = problem.n_runs, problem.n_arms
        h, alpha = cusum_defaults(problem, model)
        self.alpha = given_or(params.alpha, alpha)
        self.threshold = given_or(params.threshold, h)
        scale = 2.0 * problem.sigma  # eps and h are in units of rewards in [0, 1]
        self._h = scale * self.threshold
        self._eps = scale * params.epsilon
        self.pulls = np.zeros((R, K))
        self.sums = np.zeros((R, K))
        self.baseline = np.full((R, K), np.nan)
        self.g_plus = np.zeros((R, K))
        self.g_minus = np.zeros((R, K))
        self.detections = np.zeros(R, dtype=np.int64)
        self._draws = RoundDraws(rng.random, (2,))

    def act(self, t: int, contexts: np.ndarray | None) -> np.ndarray:
        """With probability ``alpha`` a uniform arm, else the UCB arm, ties at random
        (compiled: ``cusum_choice``)"""
        u = self._draws.next()
        return cusum_choice(u, self.alpha, self.pulls, self.sums, 2.0 * self.problem.sigma)

    def update(
        self, t: int, contexts: np.ndarray | None, actions: np.ndarray, rewards: np.ndarray
    ) -> None:
        cusum_update(
            np.asarray(actions, dtype=np.int64),
            np.asarray(rewards, dtype=float),
            float(self.params.warmup),
            float(self._eps),
            self._h,
            self.pulls,
            self.sums,
            self.baseline,
            self.g_plus,
            self.g_minus,
            self.detections,
        )

    def detection_counts(self) -> np.ndarray:
        return self.detections

    def summary(self) -> dict[str, np.ndarray]:
        return {"detections": self.detections, "alpha": self.alpha, "threshold": self.threshold}
