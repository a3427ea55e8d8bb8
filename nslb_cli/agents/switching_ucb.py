"""SW-UCB and D-UCB: UCB on recent rewards for switching bandits (Garivier & Moulines, 2011).

ALT 2011, arXiv 0805.3415 (docs/design.md §4.8). ``I_s`` the arm played in round ``s``, ``X_s``
its reward; ``t`` rounds have been played when ``I_{t+1}`` is chosen.

``sw_ucb``, sliding window of ``tau`` rounds (the last ``tau`` rounds ``t - tau + 1 .. t``):

    N_t(tau, i)    = sum_{s = t - tau + 1}^{t} 1{I_s = i}
    Xbar_t(tau, i) = 1 / N_t(tau, i) · sum_{s = t - tau + 1}^{t} X_s 1{I_s = i}
    c_t(tau, i)    = B sqrt(xi log(min(t, tau)) / N_t(tau, i))
    I_{t+1}        = argmax_i Xbar_t(tau, i) + c_t(tau, i)

``d_ucb``, discount ``gamma``: every arm's statistics are discounted in every round:

    N_t(gamma, i)    = sum_{s=1}^{t} gamma^(t - s) 1{I_s = i}
    Xbar_t(gamma, i) = 1 / N_t(gamma, i) · sum_{s=1}^{t} gamma^(t - s) X_s 1{I_s = i}
    n_t(gamma)       = sum_i N_t(gamma, i)          ( = sum_{k=0}^{t-1} gamma^k )
    c_t(gamma, i)    = 2 B sqrt(xi log n_t(gamma) / N_t(gamma, i))
    I_{t+1}          = argmax_i Xbar_t(gamma, i) + c_t(gamma, i)

An arm whose count is 0 has an infinite index; ties go to the lowest arm; no random numbers.

Defaults (``null``), from the paper, with ``Upsilon_T`` the offline model's expected changes
(``expected_changes``): ``tau = 2 B sqrt(T log T / Upsilon_T)``
rounded down in ``[1, T]``, ``gamma = 1 - sqrt(Upsilon_T / T) / (4 B)`` in ``[1/2, 1]``
(Theorem 1's range), ``xi = 0.6`` (the paper's experiments), ``bound = B = 2 sigma`` (rewards
in ``[0, B]`` are ``B/2``-sub-Gaussian). ``summary()``: the ``tau`` or ``gamma`` of each run.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nslb_cli.agents.base import Agent, Style, Windowed
from nslb_cli.agents.tuning import expected_changes, given_or
from nslb_cli.bandit.problem import OfflineModel, Problem
from nslb_cli.bandit.rng import BatchRNG
from nslb_cli.common import validators as check

#: The paper's exploration constant in its experiments.
XI = 0.6
#: Smallest default discount: the paper's Theorem 1 holds for ``gamma in (1/2, 1)``.
MIN_DEFAULT_GAMMA = 0.5
#: ``-log(1e-300)``: D-UCB's counts cannot reach 0 while ``gamma^t >= 1e-300``.
LOG_1E300 = 300.0 * np.log(10.0)


def _check_constants(xi: float, bound: float | None) -> None:
    check.positive(xi, "xi")
    if bound is not None:
        check.positive(bound, "bound")


@dataclass
class SlidingWindowUCBParams(check.Section):
    """``sw_ucb``'s parameters; ``None`` means computed (module docstring)."""

    name: str = "sw_ucb"
    # window length in rounds (>= 1; a window >= the horizon never forgets); null: the paper's 2 B
    # sqrt(n log n / U) in [1, n], U = p n expected changes, p = 1 - min_s phi(s, s) of the offline
    # model
    tau: int | None = None
    # exploration constant xi > 0 (the paper's experiments: 0.6; theory: > 1/2)
    xi: float = XI
    # the paper's B, rewards in [0, B]; null: 2 sigma (1 for Bernoulli rewards)
    bound: float | None = None

    def validate(self) -> None:
        if self.tau is not None:
            check.positive(self.tau, "tau")
        _check_constants(self.xi, self.bound)


@dataclass
class DiscountedUCBParams(check.Section):
    """``d_ucb``'s parameters; ``None`` means computed (module docstring)."""

    name: str = "d_ucb"
    # discount factor in (0, 1] (1: no forgetting, plain UCB); null: the paper's 1 - sqrt(U / n) /
    # (4 B), kept in [1/2, 1], U = p n expected changes, p = 1 - min_s phi(s, s) of the offline
    # model
    gamma: float | None = None
    # exploration constant xi > 0 (the paper's experiments: 0.6; theory: > 1/2)
    xi: float = XI
    # the paper's B, rewards in [0, B]; null: 2 sigma (1 for Bernoulli rewards)
    bound: float | None = None

    def validate(self) -> None:
        if self.gamma is not None:
            check.require(
                0.0 < self.gamma <= 1.0, "gamma", f"must be in (0, 1] or null, got {self.gamma}"
            )
        _check_constants(self.xi, self.bound)


def reward_bound(problem: Problem, bound: float | None) -> float:
    """The paper's ``B``: ``bound`` if given, else ``2 sigma`` (module docstring)."""
    return 2.0 * problem.sigma if bound is None else float(bound)


def default_window(problem: Problem, model: OfflineModel, bound: float) -> np.ndarray:
    """``tau = floor(2 B sqrt(T log T / Upsilon_T))`` in ``[1, T]``, per run, ``(R,)`` int64."""
    T = problem.horizon
    changes = expected_changes(model, T)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        tau = 2.0 * bound * np.sqrt(T * np.log(T) / changes)
    tau = np.where(changes > 0, tau, T)  # no change expected: a window of every round
    return np.clip(np.floor(tau), 1, T).astype(np.int64)


def default_discount(problem: Problem, model: OfflineModel, bound: float) -> np.ndarray:
    """``gamma = 1 - sqrt(Upsilon_T / T) / (4 B)`` in ``[1/2, 1]``, per run, ``(R,)``."""
    T = problem.horizon
    with np.errstate(over="ignore"):  # a tiny B: -inf, i.e. the floor 1/2
        gamma = 1.0 - np.sqrt(expected_changes(model, T) / T) / (4.0 * bound)
    return np.clip(gamma, MIN_DEFAULT_GAMMA, 1.0)


def optimistic_arms(
    sums: np.ndarray, counts: np.ndarray, radius: np.ndarray, some_empty: bool = True
) -> np.ndarray:
    """``argmax_i sums_i / counts_i + radius / sqrt(counts_i)`` per run (``radius`` ``(R, 1)``),
    infinite where ``counts_i = 0``, ties to the lowest arm; ``(R,)``. ``some_empty = False``
    promises that no count is 0 (the same result, faster)."""
    if not some_empty:
        return (sums / counts + radius / np.sqrt(counts)).argmax(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        index = sums / counts + radius / np.sqrt(counts)
    return np.where(counts > 0, index, np.inf).argmax(axis=1)


class SlidingWindowUCB(Windowed):
    """SW-UCB: UCB over a sliding window of the last tau rounds (Garivier & Moulines, 2011).

    Index ``mean + B sqrt(xi log(min(t, tau)) / N)`` over the window (module docstring)."""

    display_name = "SW-UCB"
    legend_rank = 90
    style = Style("#332288", "--", "<")

    Params = SlidingWindowUCBParams
    slides = True
    fixed_arms = True

    def __init__(
        self, params: SlidingWindowUCBParams, problem: Problem, model: OfflineModel, rng: BatchRNG
    ) -> None:
        super().__init__(params, problem, model, rng)
        R, K, T = problem.n_runs, problem.n_arms, problem.horizon
        self.bound = reward_bound(problem, params.bound)
        self.tau = np.minimum(given_or(params.tau, default_window(problem, model, self.bound)), T)
        self.width = self.bound * np.sqrt(params.xi)  # B sqrt(xi)
        self.counts = np.zeros((R, K))  # N_t(tau, i)
        self.sums = np.zeros((R, K))  # N_t(tau, i) Xbar_t(tau, i)
        # Ring buffer of the last `length` rounds: round s in row s % length, as the flat
        # index r K + I_s of its entry in counts and sums, and its reward. A run's window is
        # its last tau_r <= length rounds, so the round leaving it is still stored.
        self.length = int(self.tau.max())
        self.played = np.zeros((self.length, R), dtype=np.int64)
        self.rewards = np.zeros((self.length, R))
        self._uniform = bool(np.all(self.tau == self.length))  # one window for every run
        self._runs = np.arange(R)
        self._base = self._runs * K
        self._radius = np.zeros((R, 1))  # B sqrt(xi log(min(t, tau))), (R, 1)

    def act(self, t: int, contexts: np.ndarray | None) -> np.ndarray:
        if t <= self.length:  # min(t, tau) still grows for some run; constant afterwards
            # log(min(t, tau)), read as log 1 = 0 in round 0 (where every count is 0).
            horizon = np.minimum(self.tau, max(t, 1))
            self._radius = (self.width * np.sqrt(np.log(horizon)))[:, None]
        return optimistic_arms(self.sums, self.counts, self._radius)

    def update(
        self, t: int, contexts: np.ndarray | None, actions: np.ndarray, rewards: np.ndarray
    ) -> None:
        counts, sums = self.counts.reshape(-1), self.sums.reshape(-1)  # views
        row = t % self.length
        if self._uniform:
            if t >= self.length:  # round t - tau leaves every window; it sits in this row
                counts[self.played[row]] -= 1.0
                sums[self.played[row]] -= self.rewards[row]
        elif t >= self.tau.min():
            full = t >= self.tau  # the runs whose window drops round t - tau_r
            rows = (t - self.tau[full]) % self.length
            old = self.played[rows, self._runs[full]]
            counts[old] -= 1.0
            sums[old] -= self.rewards[rows, self._runs[full]]
        entry = self._base + actions
        self.played[row] = entry
        self.rewards[row] = rewards
        counts[entry] += 1.0
        sums[entry] += rewards

    def summary(self) -> dict[str, np.ndarray]:
        return {"tau": self.tau.copy()}


class DiscountedUCB(Agent):
    """D-UCB: UCB on discounted counts and means (Garivier & Moulines, 2011).

    Index ``mean + 2 B sqrt(xi log n_t(gamma) / N_t(gamma, i))``, every arm discounted by
    ``gamma`` every round (module docstring)."""

    display_name = "D-UCB"
    legend_rank = 100
    style = Style("#88CCEE", "-.", ">")

    Params = DiscountedUCBParams
    fixed_arms = True

    def __init__(
        self, params: DiscountedUCBParams, problem: Problem, model: OfflineModel, rng: BatchRNG
    ) -> None:
        super().__init__(params, problem, model, rng)
        R, K = problem.n_runs, problem.n_arms
        self.bound = reward_bound(problem, params.bound)
        self.gamma = given_or(params.gamma, default_discount(problem, model, self.bound))
        self.width = 2.0 * self.bound * np.sqrt(params.xi)  # 2 B sqrt(xi)
        self.counts = np.zeros((R, K))  # N_t(gamma, i)
        self.sums = np.zeros((R, K))  # N_t(gamma, i) Xbar_t(gamma, i)
        self.total = np.zeros(R)  # n_t(gamma)
        self._discount = self.gamma[:, None]
        self._base = np.arange(R) * K
        self._radius = np.zeros((R, 1))  # 2 B sqrt(xi log n_t(gamma)), (R, 1)
        # Once every arm is played (round K), a count is at least gamma^t: no count can have
        # decayed to 0 before gamma^t < 1e-300 (a margin above the smallest double, 5e-324).
        smallest = float(self.gamma.min())
        self._positive_until = np.inf if smallest == 1.0 else LOG_1E300 / -np.log(smallest)

    def act(self, t: int, contexts: np.ndarray | None) -> np.ndarray:
        if t < self.problem.n_arms:  # arms 0 .. t - 1 played once, arm t never: its turn
            return np.full(self.problem.n_runs, t, dtype=np.int64)
        some_empty = t >= self._positive_until
        return optimistic_arms(self.sums, self.counts, self._radius, some_empty)

    def update(
        self, t: int, contexts: np.ndarray | None, actions: np.ndarray, rewards: np.ndarray
    ) -> None:
        np.multiply(self.counts, self._discount, out=self.counts)
        np.multiply(self.sums, self._discount, out=self.sums)
        entry = self._base + actions
        self.counts.reshape(-1)[entry] += 1.0
        self.sums.reshape(-1)[entry] += rewards
        self.total = self.gamma * self.total + 1.0  # >= 1
        self._radius = (self.width * np.sqrt(np.log(self.total)))[:, None]

    def summary(self) -> dict[str, np.ndarray]:
        return {"gamma": self.gamma.copy()}
