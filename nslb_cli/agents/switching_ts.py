"""D-TS and SW-TS: Thompson sampling that forgets, by discounting or by a sliding window.

Both are model-free, per-arm baselines for switching bandits (docs/design.md §4.8). They keep,
per run and arm, a pseudo-count ``W_a`` and a pseudo-sum ``Y_a`` of the arm's rewards, and in
every round draw each arm's mean from the posterior those statistics give under the reward
model's default Thompson prior (:meth:`~nslb_cli.bandit.rewards.RewardModel.sample_given_sums`,
the prior of CD-TS, D25) and pull ``A_t = argmax_a theta_a`` (lowest index on ties):

* Gaussian rewards, prior ``N(0, sigma^2)``: ``theta_a ~ N(Y_a / (W_a + 1), sigma^2 / (W_a + 1))``;
* Bernoulli rewards, prior ``Beta(1, 1)``: ``theta_a ~ Beta(1 + Y_a, 1 + W_a - Y_a)``.

They differ only in what ``W_a`` and ``Y_a`` count.

**D-TS** (``d_ts``; Raj & Kalyani 2017, "Taming Non-stationary Bandits: A Bayesian Approach",
arXiv:1707.09727, Algorithm 1 "dTS"). The paper keeps discounted success and failure counts
and samples ``theta_k ~ Beta(S_k + alpha_0, F_k + beta_0)``; after round ``t``, for every arm
``k``::

    S_k <- gamma S_k + 1[A_t = k] R_t,     F_k <- gamma F_k + 1[A_t = k] (1 - R_t)

(the arms not pulled are discounted too). So ``S_k = sum_s gamma^(t-s) 1[A_s = k] R_s``, the
rewards of arm ``k`` weighted by ``gamma`` to the power of their age. nslb keeps the same
recursion on ``W_k = S_k + F_k`` and ``Y_k = S_k``::

    W_k <- gamma W_k + 1[A_t = k],         Y_k <- gamma Y_k + 1[A_t = k] R_t

and draws ``theta_k`` from the default-prior posterior given ``W_k + alpha_0 + beta_0 - 2``
pulls summing to ``Y_k + alpha_0 - 1``: for Bernoulli rewards exactly
``Beta(alpha_0 + S_k, beta_0 + F_k)``, the paper's rule. With ``gamma = 1`` this is plain
Thompson sampling (Agrawal & Goyal), and with ``gamma < 1`` the posterior's strength stays
below ``alpha_0 + beta_0 + 1 / (1 - gamma)``, so it keeps exploring.

*Gaussian rewards* (the paper has only Bernoulli ones). Discounting is a tempered (power)
likelihood: each past reward of arm ``k`` enters the posterior with weight
``w_s = gamma^(t - s)``,

    p(mu | H_t) ∝ N(mu; 0, sigma^2) · prod_s N(R_s; mu, sigma^2)^(w_s)
               ∝ exp(-(1 + W) mu^2 / (2 sigma^2) + Y mu / sigma^2)

with ``W = sum_s w_s`` and ``Y = sum_s w_s R_s``, i.e. ``mu ~ N(Y / (1 + W), sigma^2 / (1 + W))``:
the Gaussian default-prior posterior with the discounted count and sum in place of the plain
ones, which the recursions above maintain. The Beta posterior of the paper is the same
construction for the Bernoulli likelihood (``Beta(alpha_0 + sum w_s R_s, beta_0 +
sum w_s (1 - R_s))``). The prior parameters keep their meaning as pseudo-rewards: ``alpha_0 - 1``
rewards of 1 and ``beta_0 - 1`` rewards of 0 added to the ``N(0, sigma^2)`` prior, i.e. the prior
``N((alpha_0 - 1) / (alpha_0 + beta_0 - 1), sigma^2 / (alpha_0 + beta_0 - 1))``, proper when
``alpha_0 + beta_0 > 1`` (required; the default ``alpha_0 = beta_0 = 1`` gives ``N(0, sigma^2)``).

Defaults: ``gamma = 0.95`` and ``alpha_0 = beta_0 = 1`` (the uniform prior of Thompson
sampling), the values the paper's algorithm is run with (SMPyBandits' ``DiscountedThompson``
ships the same). The paper sets ``gamma`` as a constant, not from the horizon or the number of
changes: the total discounted count of all arms tends to ``1 / (1 - gamma) = 20`` rewards.

**SW-TS** (``sw_ts``; Trovò, Paladino, Restelli & Gatti 2020, "Sliding-Window Thompson
Sampling for Non-Stationary Settings", JAIR 68, Algorithm 1). The posterior of arm ``k`` in
round ``t`` uses only the rounds of the last ``tau`` (``max(0, t - tau) … t - 1``): ``W_k`` is the
number of pulls of ``k`` among them and ``Y_k`` the sum of their rewards, with the uniform prior
``Beta(1, 1)`` (``Beta(1 + S_k, 1 + F_k)`` for Bernoulli rewards; Gaussian rewards take the
default ``N(0, sigma^2)`` prior). With ``tau >= n`` it is plain Thompson sampling. Default
(``tau: null``): the window of the paper's analysis of abruptly changing environments. Its
regret bound adds the rounds spent after each of the ``Upsilon`` changes with an outdated
window (of order ``Upsilon tau``) to a stationary Thompson sampler's logarithmic regret, paid
again in each of the ``n / tau`` windows (of order ``(n / tau) log tau``); the two balance at

    tau = ceil(sqrt(n log(n) / Upsilon))

(constant 1), with ``Upsilon`` the expected number of changes read from the offline model
(:func:`~nslb_cli.agents.tuning.expected_changes`), capped at ``n`` (``tau = n`` when no change is
expected). For the synthetic presets (``n = 2000``, ``Upsilon = 10``) ``tau = 39``; on the fixed
scenario the final regret varies little between ``tau = 39`` and ``100`` (217, 211, 218 ± 4 at
39, 78, 100; 332 at ``4 sqrt(n log n) = 493``, Garivier & Moulines' experimental window).

Implementation. The draws and the window run in compiled per-run loops
(:mod:`nslb_cli.compiled.jit`): run ``r`` draws only from its own generator, ``K`` draws per
round in arm order (one normal or one Beta each: the numbers ``sample_given_sums`` would draw),
so a run's numbers do not depend on its batch. :func:`draw_given_sums` is the compiled twin of
:meth:`~nslb_cli.bandit.rewards.RewardModel.sample_given_sums`, selected by the model's
:attr:`~nslb_cli.bandit.rewards.RewardModel.kernel` family code like those of
:mod:`nslb_cli.bandit.reward_kernels`, and tested to draw the same numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from nslb_cli.agents.base import Agent, Style, Windowed
from nslb_cli.agents.tuning import expected_changes, given_or
from nslb_cli.bandit.problem import OfflineModel, Problem
from nslb_cli.bandit.rewards import GAUSSIAN_KERNEL
from nslb_cli.bandit.rng import BatchRNG
from nslb_cli.common import validators as check
from nslb_cli.compiled.jit import inline, jit

MIN_PRIOR = 0.01
"""Smallest ``alpha0``/``beta0``: below it Beta draws underflow to exactly 0 or 1."""


@dataclass
class DiscountedThompsonSamplingParams(check.Section):
    """D-TS's parameters (module docstring)."""

    name: str = "d_ts"
    # discount factor in (0, 1]; 1 is plain Thompson sampling (the paper's 0.95)
    gamma: float = 0.95
    # Beta prior parameter of successes (Gaussian: alpha0 - 1 pseudo-rewards of 1)
    alpha0: float = 1.0
    # Beta prior parameter of failures (Gaussian: beta0 - 1 pseudo-rewards of 0); alpha0 + beta0 >
    # 1, each >= 0.01
    beta0: float = 1.0

    def validate(self) -> None:
        check.require(
            0.0 < self.gamma <= 1.0, "gamma", f"must be in (0, 1] (a discount), got {self.gamma}"
        )
        for key in ("alpha0", "beta0"):
            value = getattr(self, key)
            check.at_least(value, MIN_PRIOR, key, "smaller Beta parameters underflow its draws")
        check.require(
            self.alpha0 + self.beta0 > 1.0,
            "alpha0",
            "alpha0 + beta0 must exceed 1 (the Gaussian prior has alpha0 + beta0 - 1 "
            f"pseudo-observations), got {self.alpha0} + {self.beta0}",
        )


@dataclass
class SlidingWindowThompsonSamplingParams(check.Section):
    """SW-TS's parameters (module docstring); ``None`` means computed."""

    name: str = "sw_ts"
    # window, in rounds (a positive integer; >= horizon: plain Thompson sampling); null: ceil(sqrt(n
    # log n / L)), L the offline model's expected changes
    tau: int | None = None

    def validate(self) -> None:
        if self.tau is not None:
            check.require(self.tau > 0, "tau", f"must be a positive integer, got {self.tau}")


@inline
def draw_given_sums(
    family: int, sigma: float, pulls: float, sums: float, generator: np.random.Generator
) -> float:
    """One draw of a mean given ``pulls`` rewards summing to ``sums`` under the default prior:
    the compiled twin of :meth:`~nslb_cli.bandit.rewards.RewardModel.sample_given_sums`, with the
    same arithmetic and the same draw: ``N(sums / (pulls + 1), sigma^2 / (pulls + 1))`` or
    ``Beta(1 + sums, 1 + pulls - sums)``."""
    if family == GAUSSIAN_KERNEL:
        scale = 1.0 / (pulls + 1.0)
        return sums * scale + sigma * np.sqrt(scale) * generator.standard_normal()
    return generator.beta(1.0 + sums, 1.0 + pulls - sums)


@jit
def thompson_arms(
    family: int,
    sigma: float,
    pulls: np.ndarray,
    sums: np.ndarray,
    pulls_offset: float,
    sums_offset: float,
    generators: Any,
) -> np.ndarray:
    """``argmax_a theta_a`` per run, ``theta_a`` drawn by :func:`draw_given_sums` from
    ``pulls[r, a] + pulls_offset`` rewards summing to ``sums[r, a] + sums_offset`` (lowest
    index on ties); run ``r`` draws ``K`` numbers from ``generators[r]``, in arm order."""
    R, K = pulls.shape
    arms = np.zeros(R, dtype=np.int64)
    for r in range(R):
        generator = generators[r]
        best = -np.inf
        for a in range(K):
            theta = draw_given_sums(
                family, sigma, pulls[r, a] + pulls_offset, sums[r, a] + sums_offset, generator
            )
            if theta > best:
                best = theta
                arms[r] = a
    return arms


@inline
def count_switch(r: int, arm: int, last: np.ndarray, switches: np.ndarray) -> None:
    """Count run ``r``'s round as an arm switch if ``arm`` differs from its previous arm
    (``last[r]``, -1 before the first round), and remember ``arm``."""
    if last[r] >= 0 and arm != last[r]:
        switches[r] += 1.0
    last[r] = arm


@jit
def discount(
    gamma: float,
    actions: np.ndarray,
    rewards: np.ndarray,
    pulls: np.ndarray,
    sums: np.ndarray,
    last: np.ndarray,
    switches: np.ndarray,
) -> None:
    """D-TS's update, in place: every arm's ``pulls`` and ``sums`` times ``gamma``, then the
    pulled arm's ``+ 1`` and ``+ reward``; arm switches counted (:func:`count_switch`)."""
    R, K = pulls.shape
    for r in range(R):
        for a in range(K):
            pulls[r, a] *= gamma
            sums[r, a] *= gamma
        arm = actions[r]
        pulls[r, arm] += 1.0
        sums[r, arm] += rewards[r]
        count_switch(r, arm, last, switches)


@jit
def slide(
    t: int,
    actions: np.ndarray,
    rewards: np.ndarray,
    window: np.ndarray,
    kept_arms: np.ndarray,
    kept_rewards: np.ndarray,
    pulls: np.ndarray,
    sums: np.ndarray,
    last: np.ndarray,
    switches: np.ndarray,
) -> None:
    """Add round ``t``'s observation to each run's window of its last ``window[r]`` rounds,
    removing round ``t - window[r]``'s, in place. ``kept_*[r, t mod window[r]]`` hold the
    rounds in the window (a circular buffer); an arm whose window count falls to 0 has its
    sum reset to exactly 0 (no rounding residue of additions and subtractions). Arm switches
    are counted (:func:`count_switch`)."""
    for r in range(len(actions)):
        slot = t % window[r]
        if t >= window[r]:
            old = kept_arms[r, slot]
            pulls[r, old] -= 1.0
            sums[r, old] -= kept_rewards[r, slot]
            if pulls[r, old] == 0.0:
                sums[r, old] = 0.0
        a = actions[r]
        kept_arms[r, slot] = a
        kept_rewards[r, slot] = rewards[r]
        pulls[r, a] += 1.0
        sums[r, a] += rewards[r]
        count_switch(r, a, last, switches)


class _ForgettingThompson(Agent):
    """Per-arm Thompson sampling on pseudo-counts and pseudo-sums (module docstring)."""

    fixed_arms = True
    pulls_offset = 0.0
    sums_offset = 0.0

    def __init__(self, params: object, problem: Problem, model: OfflineModel, rng: BatchRNG):
        super().__init__(params, problem, model, rng)
        R, K = problem.n_runs, problem.n_arms
        self.family = int(problem.reward_model.kernel[0])
        self.pulls = np.zeros((R, K))
        self.sums = np.zeros((R, K))
        self.last = np.full(R, -1, dtype=np.int64)
        self.switches = np.zeros(R)

    def act(self, t: int, contexts: np.ndarray | None) -> np.ndarray:
        return thompson_arms(
            self.family,
            float(self.problem.sigma),
            self.pulls,
            self.sums,
            self.pulls_offset,
            self.sums_offset,
            self.rng.typed(),
        )


class DiscountedThompsonSampling(_ForgettingThompson):
    """D-TS: discounted Thompson sampling (Raj & Kalyani, 2017, arXiv:1707.09727).

    Beta (or Gaussian) posteriors per arm whose pseudo-counts every arm loses a factor
    ``gamma`` of each round; see the module docstring. ``summary()``: ``gamma`` and
    ``arm_switches``, the rounds whose arm differs from the previous round's.
    """

    display_name = "D-TS"
    legend_rank = 140
    style = Style("#EE3377", "-.", "d")

    Params = DiscountedThompsonSamplingParams

    def __init__(
        self,
        params: DiscountedThompsonSamplingParams,
        problem: Problem,
        model: OfflineModel,
        rng: BatchRNG,
    ) -> None:
        super().__init__(params, problem, model, rng)
        self.gamma = float(params.gamma)
        # alpha0 - 1 pseudo-rewards of 1 and beta0 - 1 of 0 on top of the default prior
        self.pulls_offset = float(params.alpha0) + float(params.beta0) - 2.0
        self.sums_offset = float(params.alpha0) - 1.0

    def update(
        self, t: int, contexts: np.ndarray | None, actions: np.ndarray, rewards: np.ndarray
    ) -> None:
        discount(
            self.gamma,
            np.asarray(actions, dtype=np.int64),
            np.asarray(rewards, dtype=float),
            self.pulls,
            self.sums,
            self.last,
            self.switches,
        )

    def summary(self) -> dict[str, np.ndarray]:
        return {
            "gamma": np.full(self.problem.n_runs, self.gamma),
            "arm_switches": self.switches.copy(),
        }


def default_window(problem: Problem, model: OfflineModel) -> np.ndarray:
    """SW-TS's window per run, ``ceil(sqrt(n log n / Upsilon))`` capped at ``n`` (``n`` when
    no change is expected), ``(R,)`` int64 (module docstring)."""
    n = problem.horizon
    changes = expected_changes(model, n)
    with np.errstate(divide="ignore"):
        tau = np.ceil(np.sqrt(n * math.log(max(n, 2)) / changes))
    return np.where(changes > 0, np.clip(tau, 1, n), n).astype(np.int64)


class SlidingWindowThompsonSampling(_ForgettingThompson, Windowed):
    """SW-TS: sliding-window Thompson sampling (Trovò, Paladino, Restelli & Gatti, JAIR 2020).

    Each arm's posterior from its rewards in the last ``tau`` rounds only, under a uniform
    (Gaussian: ``N(0, sigma^2)``) prior; see the module docstring. ``summary()``: ``tau``
    and ``arm_switches``, the rounds whose arm differs from the previous round's.
    """

    display_name = "SW-TS"
    legend_rank = 130
    style = Style("#800000", "--", "H")

    Params = SlidingWindowThompsonSamplingParams

    def __init__(
        self,
        params: SlidingWindowThompsonSamplingParams,
        problem: Problem,
        model: OfflineModel,
        rng: BatchRNG,
    ) -> None:
        super().__init__(params, problem, model, rng)
        R, n = problem.n_runs, problem.horizon
        self.window = np.minimum(given_or(params.tau, default_window(problem, model)), n)
        size = int(self.window.max()) if R else 1
        self.kept_arms = np.zeros((R, size), dtype=np.int64)
        self.kept_rewards = np.zeros((R, size))

    def update(
        self, t: int, contexts: np.ndarray | None, actions: np.ndarray, rewards: np.ndarray
    ) -> None:
        slide(
            t,
            np.asarray(actions, dtype=np.int64),
            np.asarray(rewards, dtype=float),
            self.window,
            self.kept_arms,
            self.kept_rewards,
            self.pulls,
            self.sums,
            self.last,
            self.switches,
        )

    def summary(self) -> dict[str, np.ndarray]:
        return {"tau": self.window.astype(float), "arm_switches": self.switches.copy()}
