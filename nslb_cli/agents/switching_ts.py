"""D-TS and SW-TS: Thompson sampling that forgets, by discounting or by a sliding window.

Model-free per-arm baselines (docs/design.md §4.8). Per run and arm, a pseudo-count ``W_a`` and
pseudo-sum ``Y_a``; each round ``theta_a`` is drawn from the default-prior posterior
(``sample_given_sums``, D25) and ``A_t = argmax_a
theta_a`` pulled (lowest index on ties).

**D-TS** (Raj & Kalyani 2017, arXiv:1707.09727, Algorithm 1), every arm every round:

    W_k <- gamma W_k + 1[A_t = k],         Y_k <- gamma Y_k + 1[A_t = k] R_t

with ``theta_k`` drawn given ``W_k + alpha_0 + beta_0 - 2`` pulls summing to ``Y_k + alpha_0 -
1``: ``Beta(alpha_0 + S_k, beta_0 + F_k)`` for Bernoulli rewards, the paper's rule; for Gaussian
rewards the tempered posterior ``N(0, sigma^2) · prod_s N(R_s; mu, sigma^2)^(gamma^(t-s))``.

**SW-TS** (Trovò, Paladino, Restelli & Gatti 2020, JAIR 68, Algorithm 1): ``W_k`` and ``Y_k``
over the last ``tau`` rounds, default ``tau = ceil(sqrt(n log(n) / Upsilon))`` with
``Upsilon`` the offline model's expected changes (``expected_changes``).

The draws run in compiled per-run loops: run ``r`` draws ``K`` numbers per round from its own
generator, in arm order, the numbers ``sample_given_sums`` would draw.
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
    """The compiled twin of ``sample_given_sums``."""
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
    """``argmax_a theta_a`` per run, ``theta_a`` drawn by ``draw_given_sums`` from
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
    pulled arm's ``+ 1`` and ``+ reward``; arm switches counted (``count_switch``)."""
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
    """Add round ``t``'s observation to each run's window of ``window[r]`` rounds (a circular
    buffer ``kept_*``), removing round ``t - window[r]``'s, in place; an emptied arm's sum is
    reset to exactly 0. Arm switches are counted (``count_switch``)."""
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

    ``summary()``: ``gamma`` and ``arm_switches``, rounds whose arm differs from the last.
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

    ``summary()``: ``tau`` and ``arm_switches``, rounds whose arm differs from the last.
    """

    display_name = "SW-TS"
    legend_rank = 130
    style = Style("#800000", "--", "H")

    Params = SlidingWindowThompsonSamplingParams
    slides = True

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
