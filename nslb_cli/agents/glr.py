"""GLR-klUCB (Besson, Kaufmann, Maillard & Seznec, JMLR 2022): kl-UCB restarted by GLR tests.

"Efficient Change-Point Detection for Tackling Piecewise-Stationary Bandits", Algorithm 1:
kl-UCB indices on the rewards each arm has given since its last restart, deterministic
forced exploration, and a generalized likelihood ratio (GLR) change-point test on the pulled
arm's rewards, whose detection restarts that arm (local restarts, the default) or every arm
(global restarts). Round ``t`` (``t = 1 .. n``), per run:

1. forced exploration: with ``P = floor(K / alpha)``, if ``alpha > 0`` and
   ``t mod P`` is in ``{1, .., K}`` pull arm ``t mod P`` (the ``K`` arms in turn once every
   ``P`` rounds, a fraction ``alpha`` of the rounds); otherwise the kl-UCB arm

       A_t = argmax_a  max {q : N_a d(Y_a / N_a, q) <= f(t - 1 - tau_a)},
       f(s) = log(s) + 3 log(max(1, log(s)))   (f(s) = 0 for s <= 1),

   with ``N_a``, ``Y_a`` arm ``a``'s pulls and reward sum since its last restart ``tau_a``
   (0 at the start), ``d`` the reward model's divergence
   (``divergence``). Unpulled arms come first;
   ties are broken uniformly at random. ``log log`` is clipped at 0, as SMPyBandits'
   ``klUCBloglog`` does.
2. observe the reward; it is ``Z_k``, the ``k``-th reward of arm ``A_t`` since its restart.
   When ``k`` is a multiple of ``test_every`` (``Delta n``), the GLR test runs over the split
   points ``s = 1, 1 + Delta s, 1 + 2 Delta s, .. <= k - 1`` (``Delta s`` = ``split_every``):

       G(s) = s d(mean(Z_1..Z_s), mean(Z_1..Z_k)) + (k - s) d(mean(Z_s+1..Z_k), mean(Z_1..Z_k))
       detect when  max_s G(s) >= beta(k, delta) = log(3 k^(3/2) / delta)

   (the paper's practical threshold). On a detection the arm is restarted (``tau_a = t``,
   ``N_a = Y_a = 0``); with global restarts every arm is.

Defaults (``null``), with ``Upsilon`` the offline model's expected changes
(``expected_changes``, at least 1):

* local restarts: ``delta = 1 / sqrt(K Upsilon n)``,
  ``alpha = alpha_scale sqrt(K Upsilon log(n) / n)``;
* global restarts: ``delta = 1 / sqrt(Upsilon n)``,
  ``alpha = alpha_scale sqrt(Upsilon log(n) / n)``;
* ``alpha_scale = 0.05`` (the paper's ``alpha_0``), ``Delta n = Delta s = 10``.

One uniform per run and round (the tie-break). Per run statistics: ``detections``, ``alpha``
and ``delta``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nslb_cli.agents.base import Agent, Style
from nslb_cli.agents.cusum import random_argmax
from nslb_cli.agents.round_draws import RoundDraws
from nslb_cli.agents.tuning import check_exploration, expected_changes, exploration_period, given_or
from nslb_cli.bandit.problem import OfflineModel, Problem, Sizes
from nslb_cli.bandit.rewards import GAUSSIAN_KERNEL, KL_EPSILON
from nslb_cli.bandit.rng import BatchRNG
from nslb_cli.common import validators as check
from nslb_cli.compiled.jit import inline, jit

RESTARTS = ("local", "global")
MAX_STEP = 2**31
"""Largest ``test_every`` / ``split_every``: a step beyond any horizon already means "test
once" or "one split point"; larger values only risk int64 overflow in ``1 + j Delta s``."""


@dataclass
class GLRklUCBParams(check.Section):
    """GLR-klUCB's parameters; ``None`` means computed from ``n``, ``K`` and ``Upsilon``."""

    name: str = "glr_klucb"
    # local: a detection restarts the arm tested; global: every arm
    restarts: str = "local"
    # confidence of the test in (0, 1]: threshold log(3 k^1.5 / delta) on k rewards; null: 1 /
    # sqrt(K Upsilon n) (local), 1 / sqrt(Upsilon n) (global)
    delta: float | None = None
    # forced-exploration fraction in [0, 1] (arms 1..K in turn every floor(K / alpha) rounds; 0:
    # none); null: alpha_scale sqrt(K Upsilon log(n) / n) (local), alpha_scale sqrt(Upsilon log(n) /
    # n) (global)
    alpha: float | None = None
    # the paper's alpha_0 in [0, 1], scaling the null alpha
    alpha_scale: float = 0.05
    # Delta n >= 1: test an arm after every Delta n-th reward since its restart
    test_every: int = 10
    # Delta s >= 1: split points s = 1, 1 + Delta s, ... of the test
    split_every: int = 10

    def validate(self) -> None:
        check.one_of(self.restarts, RESTARTS, "restarts")
        if self.delta is not None:
            check.positive(self.delta, "delta")
            check.require(self.delta <= 1.0, "delta", f"must be in (0, 1], got {self.delta}")
        check_exploration(self.alpha, "alpha")
        check.probability(self.alpha_scale, "alpha_scale")
        for key in ("test_every", "split_every"):
            value = getattr(self, key)
            check.require(
                1 <= value <= MAX_STEP, key, f"must be an integer in [1, {MAX_STEP}], got {value}"
            )


def glr_defaults(
    problem: Problem, model: OfflineModel, restarts: str, alpha_scale: float
) -> tuple[np.ndarray, np.ndarray]:
    """``(delta, alpha)`` per run, ``(R,)``, cut to ``[0, 1]``."""
    n = problem.horizon
    upsilon = np.clip(expected_changes(model, n), 1.0, n)
    c = problem.n_arms if restarts == "local" else 1
    delta = np.minimum(1.0, 1.0 / np.sqrt(c * upsilon * n))
    alpha = np.minimum(1.0, alpha_scale * np.sqrt(c * upsilon * np.log(n) / n))
    return delta, alpha


def exploration(s: np.ndarray) -> np.ndarray:
    """``f(s) = log(s) + 3 log(max(1, log(s)))`` for ``s >= 1`` (``f(1) = 0``)."""
    log_s = np.log(np.maximum(s, 1.0))
    return log_s + 3.0 * np.log(np.maximum(1.0, log_s))


@inline
def divergence_of(family: int, variance: float, x: float, y: float) -> float:
    """The compiled twin of ``divergence``."""
    if family == GAUSSIAN_KERNEL:
        return (x - y) ** 2 / (2.0 * variance)
    x = min(max(x, KL_EPSILON), 1.0 - KL_EPSILON)
    y = min(max(y, KL_EPSILON), 1.0 - KL_EPSILON)
    return x * np.log(x / y) + (1.0 - x) * np.log((1.0 - x) / (1.0 - y))


@jit
def glr_update(
    family: int,
    variance: float,
    t: int,
    actions: np.ndarray,
    rewards: np.ndarray,
    test_every: int,
    split_every: int,
    delta: np.ndarray,
    restart_all: bool,
    pulls: np.ndarray,
    sums: np.ndarray,
    prefix: np.ndarray,
    restart: np.ndarray,
    detections: np.ndarray,
) -> None:
    """``GLRklUCB.update``, compiled, in place: the pulled arm's statistics and split-point
    sums, its GLR test when due (stopping at the first split point over the threshold), and
    the restart on a detection (of every arm with ``restart_all``)."""
    K = pulls.shape[1]
    for r in range(len(actions)):
        a = actions[r]
        k = pulls[r, a] + 1
        total = sums[r, a] + rewards[r]
        pulls[r, a] = k
        sums[r, a] = total
        if (k - 1) % split_every == 0:
            prefix[r, a, (k - 1) // split_every] = total
        if k % test_every != 0 or k < 2:
            continue
        mean = total / k
        threshold = np.log(3.0) + 1.5 * np.log(k) - np.log(delta[r])
        fired = False
        split = 1
        while split <= k - 1 and not fired:
            first = prefix[r, a, (split - 1) // split_every]
            g = split * divergence_of(family, variance, first / split, mean) + (
                k - split
            ) * divergence_of(family, variance, (total - first) / (k - split), mean)
            fired = g >= threshold
            split += split_every
        if not fired:
            continue
        detections[r] += 1
        for b in range(K):
            if restart_all or b == a:
                pulls[r, b] = 0
                sums[r, b] = 0.0
                restart[r, b] = t + 1


class GLRklUCB(Agent):
    """GLR-klUCB (Besson, Kaufmann, Maillard & Seznec, JMLR 2022): kl-UCB with GLR restarts.

    Per run and arm: ``pulls`` (``N_a``), ``sums`` (``Y_a``), ``restart`` (``tau_a``) and
    ``prefix`` ``(R, K, ceil(n / Delta s))``, the sums of the first ``1 + j Delta s`` rewards.
    """

    display_name = "GLR-klUCB"
    legend_rank = 120
    style = Style("#DDCC77", (0, (5, 1)), "p")

    Params = GLRklUCBParams
    fixed_arms = True

    @classmethod
    def memory(cls, params: GLRklUCBParams, sizes: Sizes) -> dict[str, int]:
        """The default statistics and ``prefix``, ``8 R K ceil(n / Delta s)`` bytes, which
        grow with the horizon and the arms."""
        splits = -(-sizes.horizon // params.split_every)
        return super().memory(params, sizes) | {
            "env.horizon, env.n_arms": 8 * sizes.n_runs * sizes.n_arms * splits
        }

    def __init__(
        self, params: GLRklUCBParams, problem: Problem, model: OfflineModel, rng: BatchRNG
    ) -> None:
        super().__init__(params, problem, model, rng)
        R, K, n = problem.n_runs, problem.n_arms, problem.horizon
        delta, alpha = glr_defaults(problem, model, params.restarts, params.alpha_scale)
        self.delta, self.alpha = given_or(params.delta, delta), given_or(params.alpha, alpha)
        self.period = exploration_period(self.alpha, K)
        self.pulls = np.zeros((R, K), dtype=np.int64)
        self.sums = np.zeros((R, K))
        self.restart = np.zeros((R, K), dtype=np.int64)
        self.prefix = np.zeros((R, K, -(-n // params.split_every)))
        self.detections = np.zeros(R, dtype=np.int64)
        self._draws = RoundDraws(rng.random)
        self._global = params.restarts == "global"

    def index(self, t: int) -> np.ndarray:
        """kl-UCB indices ``(R, K)`` in (0-based) round ``t``; ``+inf`` for unpulled arms."""
        pulls = self.pulls.astype(float)
        level = exploration((t - self.restart).astype(float)) / np.maximum(pulls, 1.0)
        means = self.sums / np.maximum(pulls, 1.0)
        ucb = self.problem.reward_model.upper_confidence(means, level)
        return np.where(self.pulls > 0, ucb, np.inf)

    def act(self, t: int, contexts: np.ndarray | None) -> np.ndarray:
        u = self._draws.next()
        phase = (t + 1) % np.maximum(self.period, 1)
        forced = (self.period > 0) & (phase >= 1) & (phase <= self.problem.n_arms)
        if forced.all():
            return phase - 1
        return np.where(forced, phase - 1, random_argmax(self.index(t), u))

    def update(
        self, t: int, contexts: np.ndarray | None, actions: np.ndarray, rewards: np.ndarray
    ) -> None:
        family, variance = self.problem.reward_model.kernel
        glr_update(
            int(family),
            float(variance),
            t,
            np.asarray(actions, dtype=np.int64),
            np.asarray(rewards, dtype=float),
            self.params.test_every,
            self.params.split_every,
            self.delta,
            self._global,
            self.pulls,
            self.sums,
            self.prefix,
            self.restart,
            self.detections,
        )

    def detection_counts(self) -> np.ndarray:
        return self.detections

    def summary(self) -> dict[str, np.ndarray]:
        return {"detections": self.detections, "alpha": self.alpha, "delta": self.delta}
