"""mTS: model-based Thompson sampling with a known model (the paper's Algorithm 1).

The agent keeps the filtering distribution ``P_t(s) = P(S_t = s | H_t)`` of an HMM whose
emissions are the rewards. Each round:

1. sample a belief state ``B_t ~ P_t`` and pull ``A_t = argmax_a mu(a, X_t, B_t)``;
2. observe ``R_t`` and update (the paper's equation (1))::

       P_{t+1}(s') ∝ sum_s P_t(s) · p(R_t | mu(A_t, X_t, s)) · phi(s, s')

   with ``p(r | mu)`` the problem's reward likelihood (:mod:`nslb_cli.core.rewards`):
   ``N(r; mu, sigma^2)`` for Gaussian rewards, ``mu^r (1 - mu)^(1 - r)`` for Bernoulli ones.

``P_1`` is the model's initial distribution. The reported belief is the sampled ``B_t`` and
``p_true_state`` is ``P_t(S_t)``. The predicted means ``mu(·, X_t, ·)`` are computed once per
round and shared by ``act`` and ``update``; the uniforms behind ``B_t`` are drawn in blocks of
rounds (:class:`~nslb_cli.agents.round_draws.RoundDraws`, the same numbers).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nslb_cli.agents.base import Agent, Belief
from nslb_cli.agents.round_draws import RoundDraws
from nslb_cli.core.numerics import shifted_exp
from nslb_cli.core.problem import OfflineModel, Problem
from nslb_cli.core.rng import BatchRNG, categorical


def filter_step(
    predictive: np.ndarray, log_likelihood: np.ndarray, transitions: np.ndarray
) -> np.ndarray:
    """One forward-filter step: ``P_{t+1}(s') ∝ sum_s P_t(s) p(R_t | s) phi(s, s')``.

    Args:
        predictive: ``(R, S)`` ``P_t``, the distribution of ``S_t`` given ``H_t``.
        log_likelihood: ``(R, S)`` ``log p(R_t | A_t, X_t, S_t = s)``.
        transitions: ``(R, S, S)`` ``phi``.

    Returns:
        ``(R, S)`` ``P_{t+1}``. Computed without BLAS so each run's numbers do not depend
        on the batch it is in.
    """
    filtered = predictive * shifted_exp(log_likelihood)
    filtered /= filtered.sum(axis=1, keepdims=True)
    return (filtered[:, :, None] * transitions).sum(axis=1)


@dataclass
class MTSParams:
    name: str = "mts"


class ModelThompsonSampling(Agent):
    """mTS (Algorithm 1 of Hong et al., 2021): exact HMM filter and Thompson sampling of
    the latent state.

    With an uncertain offline model, mTS uses the point estimates (prior means) as if they
    were true (docs/design.md §3.1).
    """

    Params = MTSParams

    def __init__(
        self, params: MTSParams, problem: Problem, model: OfflineModel, rng: BatchRNG
    ) -> None:
        super().__init__(params, problem, model, rng)
        self.predictive = model.initial.copy()
        self._uniforms = RoundDraws(rng.random)
        self._means = (-1, model.means)  # (round t, mu(a, X_t, s) (R, S, K)): see predicted
        self._belief: Belief | None = None

    def predicted(self, t: int, contexts: np.ndarray | None) -> np.ndarray:
        """``mu(a, X_t, s)``, ``(R, S, K)``: computed once per round, shared by act and update."""
        if self._means[0] != t:
            self._means = (t, self.model.expected_rewards(contexts))
        return self._means[1]

    def act(self, t: int, contexts: np.ndarray | None) -> np.ndarray:
        means = self.predicted(t, contexts)
        state = categorical(self.predictive, self._uniforms.next())
        self._belief = Belief(state=state, posterior=self.predictive)
        runs = np.arange(len(state))
        return means[runs, state].argmax(axis=1)

    def update(
        self, t: int, contexts: np.ndarray | None, actions: np.ndarray, rewards: np.ndarray
    ) -> None:
        means = self.predicted(t, contexts)
        pulled = means[np.arange(len(actions)), :, actions]  # (R, S): mu(A_t, X_t, s)
        log_lik = self.problem.reward_model.log_likelihood(rewards[:, None], pulled)
        self.predictive = filter_step(self.predictive, log_lik, self.model.transitions)

    def belief(self) -> Belief | None:
        return self._belief
