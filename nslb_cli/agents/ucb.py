"""SW-mUCB (the paper's Algorithm 4) and SW-umUCB (its appendix, proof of Theorem 2).

Both keep, for the last ``tau`` rounds ``l = max(1, t - tau) .. t - 1``, the believed state
``B_l``, and compute for every latent state ``s``::

    N_t(s) = sum_l 1{B_l = s}
    G_t(s) = sum_l 1{B_l = s} (mu(A_l, X_l, s) - epsilon - R_l)
    C_t    = {s : G_t(s) <= sigma sqrt(6 N_t(s) log n)}          (consistent states)
    (B_t, A_t) = argmax_{s in C_t, a} mu(a, X_t, s)                 (ties: lowest s, then a)

with ``mu`` the offline model's point estimate (the true means when the model is known, the
prior means otherwise), ``n`` the horizon and ``sigma`` the rewards' sub-Gaussian scale
(``Problem.sigma``: the noise standard deviation of Gaussian rewards, ``1/2`` for Bernoulli
rewards, as for any reward in ``[0, 1]``).

* ``sw_mucb``: ``epsilon = 0`` (Algorithm 4).
* ``sw_umucb``: the slack ``epsilon > 0`` keeps the true state consistent when the prior
  means over-predict its rewards by less than ``epsilon``. Default (``null``): the largest
  prior standard deviation of the model's means, one ``sigma_0`` (0 for a known model, where
  SW-umUCB is SW-mUCB). The appendix's theorem asks for ``|mu_bar - mu| <= epsilon`` for all
  arms and states with high probability, i.e. ``epsilon`` of 2.5-3 ``sigma_0`` for 25 means,
  which keeps nearly every state consistent (4.9 of 5 on average with ``epsilon = 0.55``
  and ``tau = 100`` in the synthetic prior scenario). Linear models need an explicit value.

If no state is consistent, the agent falls back to all states; ``summary()`` counts these
rounds per run (``fallbacks``). Its belief is ``B_t`` with a "posterior" uniform over the
consistent set ``C_t`` (not a probability model: ``p_true_state`` is ``1 / |C_t|`` when the
true state is consistent, 0 otherwise).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from nslb_cli.agents.base import Agent, Belief
from nslb_cli.config import validators as check
from nslb_cli.config.validators import ConfigError
from nslb_cli.core.problem import OfflineModel, Problem
from nslb_cli.core.rng import BatchRNG

MAX_EPSILON = 1e12
"""Largest slack ``epsilon``, in reward units. ``G_t(s)`` sums ``tau`` residuals that each
subtract ``epsilon``: ``epsilon = 1e308`` overflows the sum to -inf (numpy warns every
round). Rewards stay within about 1e7 in magnitude (means and noise of at most 1e6), so a
slack of 1e12 already keeps every state consistent, and ``tau · 1e12`` stays finite."""


@dataclass
class SWMUCBParams:
    name: str = "sw_mucb"
    tau: int = 100

    def __post_init__(self) -> None:
        check.int64(self.tau, "tau")
        check.positive(self.tau, "tau")


@dataclass
class SWUMUCBParams:
    name: str = "sw_umucb"
    tau: int = 100
    epsilon: float | None = None

    def __post_init__(self) -> None:
        check.int64(self.tau, "tau")
        check.positive(self.tau, "tau")
        if self.epsilon is not None:
            check.non_negative(self.epsilon, "epsilon")
            check.at_most(self.epsilon, MAX_EPSILON, "epsilon", "larger window sums overflow")


class SlidingWindowModelUCB(Agent):
    """SW-mUCB (Algorithm 4): elimination of latent states inconsistent with the last ``tau``
    rounds, then optimism over the consistent ones (Hong et al., 2021).

    See the module docstring."""

    Params: ClassVar[type] = SWMUCBParams

    def __init__(
        self, params: SWMUCBParams, problem: Problem, model: OfflineModel, rng: BatchRNG
    ) -> None:
        super().__init__(params, problem, model, rng)
        R, tau = problem.n_runs, params.tau
        self.epsilon = self.slack()
        self.believed = np.full((R, tau), -1, dtype=np.int64)  # B_l, ring buffer; -1: empty
        self.residuals = np.zeros((R, tau))  # mu(A_l, X_l, B_l) - epsilon - R_l
        self.radius = problem.sigma * np.sqrt(6.0 * np.log(problem.horizon))
        self.fallbacks = np.zeros(R, dtype=np.int64)
        self.state = np.zeros(R, dtype=np.int64)
        self._runs = np.arange(R)
        self._belief: Belief | None = None

    def slack(self) -> np.ndarray:
        """``epsilon`` per run: 0 for SW-mUCB."""
        return np.zeros(self.problem.n_runs)

    def consistent_states(self) -> np.ndarray:
        """``C_t`` as an ``(R, S)`` mask, before any fallback."""
        S = self.problem.n_states
        member = self.believed[:, None, :] == np.arange(S)[None, :, None]  # (R, S, tau)
        count = member.sum(axis=2)
        gap = (member * self.residuals[:, None, :]).sum(axis=2)
        return gap <= self.radius * np.sqrt(count)

    def act(self, t: int, contexts: np.ndarray | None) -> np.ndarray:
        means = self.model.expected_rewards(contexts)  # (R, S, K)
        R, S, K = means.shape
        consistent = self.consistent_states()
        empty = ~consistent.any(axis=1)
        self.fallbacks += empty
        consistent[empty] = True
        best = np.where(consistent[:, :, None], means, -np.inf).reshape(R, S * K).argmax(axis=1)
        self.state, actions = np.divmod(best, K)
        uniform = consistent / consistent.sum(axis=1, keepdims=True)
        self._belief = Belief(state=self.state, posterior=uniform)
        return actions

    def update(
        self, t: int, contexts: np.ndarray | None, actions: np.ndarray, rewards: np.ndarray
    ) -> None:
        predicted = self.model.expected_rewards(contexts)[self._runs, self.state, actions]
        slot = t % self.params.tau
        self.believed[:, slot] = self.state
        self.residuals[:, slot] = predicted - self.epsilon - rewards

    def belief(self) -> Belief | None:
        return self._belief

    def summary(self) -> dict[str, np.ndarray]:
        return {"fallbacks": self.fallbacks}


class SlidingWindowUncertainModelUCB(SlidingWindowModelUCB):
    """SW-umUCB: SW-mUCB on the prior means with slack ``epsilon`` (Hong et al., 2021,
    appendix).

    See the module docstring."""

    Params = SWUMUCBParams

    def slack(self) -> np.ndarray:
        if self.params.epsilon is not None:
            return np.full(self.problem.n_runs, float(self.params.epsilon))
        if self.model.linear:
            raise ConfigError(
                "agent.epsilon", "null is defined for multi-armed models only; give a value"
            )
        return self.model.mean_sd.max(axis=(1, 2))
