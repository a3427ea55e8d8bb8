"""SW-mUCB (the paper's Algorithm 4) and SW-umUCB (its appendix, proof of Theorem 2).

Both keep, for the last ``tau`` rounds ``l = max(1, t - tau) .. t - 1``, the believed state
``B_l``, and compute for every latent state ``s``:

    N_t(s) = sum_l 1{B_l = s}
    G_t(s) = sum_l 1{B_l = s} (mu(A_l, X_l, s) - epsilon - R_l)
    C_t    = {s : G_t(s) <= sigma sqrt(6 N_t(s) log n)}          (consistent states)
    (B_t, A_t) = argmax_{s in C_t, a} mu(a, X_t, s)                 (ties: lowest s, then a)

with ``mu`` the offline model's point estimate, ``n`` the horizon and ``sigma = Problem.sigma``
(docs/design.md §4.3).

* ``sw_mucb``: ``epsilon = 0`` (Algorithm 4).
* ``sw_umucb``: slack ``epsilon > 0``; default (``null``) the largest prior standard deviation
  of the model's means (0 for a known model). Linear models need an explicit value.

If no state is consistent, the agent falls back to all states (``fallbacks`` in
``summary()``). Its belief is ``B_t`` with a "posterior" uniform over ``C_t``. ``G_t(s)`` is
summed each round in numpy's order (``window_sums``), so the compiled comparisons are
numpy's, to the last bit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from nslb_cli.agents.base import Belief, Style, Windowed
from nslb_cli.bandit.numerics import pairwise_plan
from nslb_cli.bandit.problem import OfflineModel, Problem
from nslb_cli.bandit.rng import BatchRNG
from nslb_cli.common import validators as check
from nslb_cli.common.errors import ConfigError
from nslb_cli.compiled.jit import inline, jit


@dataclass
class SWMUCBParams(check.Section):
    name: str = "sw_mucb"
    # window length in rounds
    tau: int = 100

    def validate(self) -> None:
        check.positive(self.tau, "tau")


@dataclass
class SWUMUCBParams(SWMUCBParams):
    name: str = "sw_umucb"
    # slack >= 0; null: the model's largest prior sd of a mean (0 if known)
    epsilon: float | None = None

    def validate(self) -> None:
        super().validate()
        if self.epsilon is not None:
            check.non_negative(self.epsilon, "epsilon")


@inline
def block_sums(
    states: np.ndarray,
    values: np.ndarray,
    r: int,
    lo: int,
    m: int,
    acc: np.ndarray,
    sums: np.ndarray,
    k: int,
) -> None:
    """``sums[k, s] = sum_{lo <= i < lo + m} 1{states[r, i] = s} values[r, i]`` for every
    state ``s`` (``states[r, i] = -1``: none), in place, for ``m <= PAIRWISE_BLOCK`` terms
    added as numpy's pairwise sum adds them (eight partial sums from 8 terms on); a term of
    another state, a zero, is skipped. ``acc``: ``(S, 8)`` scratch."""
    S = sums.shape[1]
    blocked = 0 if m < 8 else m - m % 8
    for s in range(S):
        sums[k, s] = 0.0
    if blocked:
        acc[:] = 0.0
        for i in range(blocked):
            s = states[r, lo + i]
            if s >= 0:
                acc[s, i & 7] += values[r, lo + i]
        for s in range(S):
            sums[k, s] = ((acc[s, 0] + acc[s, 1]) + (acc[s, 2] + acc[s, 3])) + (
                (acc[s, 4] + acc[s, 5]) + (acc[s, 6] + acc[s, 7])
            )
    for i in range(lo + blocked, lo + m):
        s = states[r, i]
        if s >= 0:
            sums[k, s] += values[r, i]


@inline
def window_sums(
    states: np.ndarray,
    values: np.ndarray,
    r: int,
    plan: np.ndarray,
    acc: np.ndarray,
    stack: np.ndarray,
) -> None:
    """``stack[0, s] = sum_i 1{states[r, i] = s} values[r, i]`` for every state ``s``, in the
    order of numpy's ``(member * values).sum()`` (``plan``: ``pairwise_plan``).
    ``acc``: ``(S, 8)`` scratch; ``stack``: ``(len(plan), S)`` scratch."""
    top = 0
    for k in range(len(plan)):
        if plan[k, 0] >= 0:
            block_sums(states, values, r, plan[k, 0], plan[k, 1], acc, stack, top)
            top += 1
            continue
        top -= 1
        for s in range(stack.shape[1]):
            stack[top - 1, s] += stack[top, s]


@jit
def sw_mucb_choice(
    means: np.ndarray,
    believed: np.ndarray,
    residuals: np.ndarray,
    counts: np.ndarray,
    plan: np.ndarray,
    radius: float,
    fallbacks: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``SlidingWindowModelUCB.act``, compiled: ``C_t`` (all states if empty, counted in
    ``fallbacks``), then the first ``(s, a)`` of largest ``means[s, a]`` over ``s in C_t``.
    Returns ``B_t`` and ``A_t`` ``(R,)`` and the uniform distribution on ``C_t`` ``(R, S)``."""
    R, S, K = means.shape
    states = np.zeros(R, dtype=np.int64)
    arms = np.zeros(R, dtype=np.int64)
    uniform = np.zeros((R, S))
    stack = np.empty((len(plan), S))  # G_t(s) in row 0
    acc = np.empty((S, 8))
    consistent = np.empty(S, dtype=np.bool_)
    for r in range(R):
        window_sums(believed, residuals, r, plan, acc, stack)
        size = 0
        for s in range(S):
            consistent[s] = stack[0, s] <= radius * np.sqrt(counts[r, s])
            size += consistent[s]
        if size == 0:
            fallbacks[r] += 1
            consistent[:] = True
            size = S
        found = False
        best = 0.0
        for s in range(S):
            if not consistent[s]:
                continue
            uniform[r, s] = 1.0 / size
            for a in range(K):
                if not found or means[r, s, a] > best:
                    found = True
                    best = means[r, s, a]
                    states[r] = s
                    arms[r] = a
    return states, arms, uniform


@jit
def sw_mucb_update(
    means: np.ndarray,
    states: np.ndarray,
    actions: np.ndarray,
    rewards: np.ndarray,
    epsilon: np.ndarray,
    slot: int,
    believed: np.ndarray,
    residuals: np.ndarray,
    counts: np.ndarray,
) -> None:
    """``SlidingWindowModelUCB.update``, compiled, in place: ring-buffer slot ``slot``
    of every run takes ``B_t`` and its residual ``means[B_t, A_t] - epsilon - R_t``, and
    ``counts`` (``N(s)``) trades the state that leaves the window for ``B_t``."""
    for r in range(len(states)):
        left = believed[r, slot]
        if left >= 0:
            counts[r, left] -= 1
        s = states[r]
        believed[r, slot] = s
        counts[r, s] += 1
        residuals[r, slot] = means[r, s, actions[r]] - epsilon[r] - rewards[r]


class SlidingWindowModelUCB(Windowed):
    """SW-mUCB (Algorithm 4): elimination of latent states inconsistent with the last ``tau``
    rounds, then optimism over the consistent ones (Hong et al., 2021).

    The window, per run: ``believed`` (``B_l``, -1 for slots not yet filled) and
    ``residuals`` in a ring buffer, and ``counts``, ``N_t(s)``."""

    display_name = "SW-mUCB"
    legend_rank = 70
    style = Style("#999933", (0, (5, 1)), "P")

    Params: ClassVar[type] = SWMUCBParams
    latent_model = "discrete"
    slides = True

    def __init__(
        self, params: SWMUCBParams, problem: Problem, model: OfflineModel, rng: BatchRNG
    ) -> None:
        super().__init__(params, problem, model, rng)
        R, tau = problem.n_runs, params.tau
        self.epsilon = self.slack()
        self.believed = np.full((R, tau), -1, dtype=np.int64)  # B_l, ring buffer; -1: empty
        self.residuals = np.zeros((R, tau))  # mu(A_l, X_l, B_l) - epsilon - R_l
        self.counts = np.zeros((R, problem.n_states), dtype=np.int64)  # N_t(s)
        self.plan = pairwise_plan(tau)  # the order of the sums G_t(s)
        self.radius = problem.sigma * np.sqrt(6.0 * np.log(problem.horizon))
        self.fallbacks = np.zeros(R, dtype=np.int64)
        self.state = np.zeros(R, dtype=np.int64)
        self._belief: Belief | None = None

    def slack(self) -> np.ndarray:
        """``epsilon`` per run: 0 for SW-mUCB."""
        return np.zeros(self.problem.n_runs)

    def act(self, t: int, contexts: np.ndarray | None) -> np.ndarray:
        """``(B_t, A_t) = argmax_{s in C_t, a} mu(a, X_t, s)``, compiled
        (``sw_mucb_choice``)."""
        self.state, actions, uniform = sw_mucb_choice(
            self.model.expected_rewards(contexts),
            self.believed,
            self.residuals,
            self.counts,
            self.plan,
            float(self.radius),
            self.fallbacks,
        )
        self._belief = Belief(state=self.state, posterior=uniform)
        return actions

    def update(
        self, t: int, contexts: np.ndarray | None, actions: np.ndarray, rewards: np.ndarray
    ) -> None:
        """Slot ``t mod tau`` of the window takes ``B_t`` and ``mu(A_t, X_t, B_t) - epsilon -
        R_t``, compiled (``sw_mucb_update``)."""
        sw_mucb_update(
            self.model.expected_rewards(contexts),
            self.state,
            np.asarray(actions, dtype=np.int64),
            np.asarray(rewards, dtype=float),
            self.epsilon,
            t % self.params.tau,
            self.believed,
            self.residuals,
            self.counts,
        )

    def belief(self) -> Belief | None:
        return self._belief

    def summary(self) -> dict[str, np.ndarray]:
        return {"fallbacks": self.fallbacks}


class SlidingWindowUncertainModelUCB(SlidingWindowModelUCB):
    """SW-umUCB: SW-mUCB on the prior means with slack ``epsilon`` (Hong et al., 2021,
    appendix)."""

    display_name = "SW-umUCB"
    legend_rank = 80
    style = Style("#44AA99", (0, (5, 1)), "P")

    Params = SWUMUCBParams

    def slack(self) -> np.ndarray:
        if self.params.epsilon is not None:
            return np.full(self.problem.n_runs, float(self.params.epsilon))
        if self.model.linear:
            raise ConfigError(
                "agent.epsilon", "null is defined for multi-armed models only; give a value"
            )
        return self.model.mean_sd.max(axis=(1, 2))
