"""mTS: model-based Thompson sampling with a known model (the paper's Algorithm 1).

The agent keeps the filtering distribution ``P_t(s) = P(S_t = s | H_t)`` of an HMM whose
emissions are the rewards. Each round:

1. sample a belief state ``B_t ~ P_t`` and pull ``A_t = argmax_a mu(a, X_t, B_t)``;
2. observe ``R_t`` and update (the paper's equation (1)):

       P_{t+1}(s') ∝ sum_s P_t(s) · p(R_t | mu(A_t, X_t, s)) · phi(s, s')

   with ``p(r | mu)`` the problem's reward likelihood (``nslb_cli.bandit.rewards``):
   ``N(r; mu, sigma^2)`` for Gaussian rewards, ``mu^r (1 - mu)^(1 - r)`` for Bernoulli ones,
   ``O[s, A_t, o_t]`` for categorical outcomes with a known observation model.

``P_1`` is the model's initial distribution. The reported belief is the sampled ``B_t`` and
``p_true_state`` is ``P_t(S_t)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nslb_cli.agents.base import Agent, Belief, Style
from nslb_cli.agents.round_draws import RoundDraws
from nslb_cli.bandit.numerics import pairwise_sum_rows
from nslb_cli.bandit.problem import OfflineModel, Problem
from nslb_cli.bandit.rewards import Categorical
from nslb_cli.bandit.rng import BatchRNG, categorical_first_axis
from nslb_cli.common import validators as check


def filter_step(
    predictive: np.ndarray, log_likelihood: np.ndarray, transitions: np.ndarray
) -> np.ndarray:
    """One forward-filter step: ``P_{t+1}(s') ∝ sum_s P_t(s) p(R_t | s) phi(s, s')``.

    Arrays are state-major (the state axis first, runs last), so that every sum over states
    adds whole rows of ``R`` numbers.

    Args:
        predictive: ``(S, R)`` ``P_t``, the distribution of ``S_t`` given ``H_t``.
        log_likelihood: ``(S, R)`` ``log p(R_t | A_t, X_t, S_t = s)``.
        transitions: ``(S, S, R)`` ``phi(s, s')`` of every run.

    Returns:
        ``(S, R)`` ``P_{t+1}``, never through BLAS; the numbers of the run-major statement to
        the last bit (``pairwise_sum_rows``).
    """
    filtered = predictive * np.exp(log_likelihood - log_likelihood.max(axis=0))
    filtered /= pairwise_sum_rows(filtered)
    return (filtered[:, None, :] * transitions).sum(axis=0)


@dataclass
class MTSParams(check.Section):
    name: str = "mts"


class ModelThompsonSampling(Agent):
    """mTS (Algorithm 1 of Hong et al., 2021): exact HMM filter and Thompson sampling of
    the latent state.

    With an uncertain offline model, mTS uses the point estimates (prior means) as if they
    were true (docs/design.md §3.1).
    """

    display_name = "mTS"
    legend_rank = 180
    style = Style("#0072B2", "-", "o")

    Params = MTSParams
    latent_model = "discrete"

    def __init__(
        self, params: MTSParams, problem: Problem, model: OfflineModel, rng: BatchRNG
    ) -> None:
        super().__init__(params, problem, model, rng)
        # P_t and phi state-major, runs last (filter_step): P_t is (S, R), phi (S, S, R)
        self._filter = np.ascontiguousarray(model.initial.T, dtype=float)
        self._transitions = np.ascontiguousarray(model.transitions.transpose(1, 2, 0))
        self._uniforms = RoundDraws(rng.random)
        self._means = (-1, model.means)  # (round t, mu(a, X_t, s) (R, S, K)): see predicted
        self._belief: Belief | None = None
        self._runs = np.arange(problem.n_runs)

    @property
    def predictive(self) -> np.ndarray:
        """``P_t``, ``(R, S)`` (a view of the state-major array)."""
        return self._filter.T

    def predicted(self, t: int, contexts: np.ndarray | None) -> np.ndarray:
        """``mu(a, X_t, s)``, ``(R, S, K)``: computed once per round, shared by act and update."""
        if self._means[0] != t:
            self._means = (t, self.model.expected_rewards(contexts))
        return self._means[1]

    def act(self, t: int, contexts: np.ndarray | None) -> np.ndarray:
        means = self.predicted(t, contexts)
        state = categorical_first_axis(self._filter, self._uniforms.next())
        self._belief = Belief(state=state, posterior=self.predictive)
        return means[self._runs, state].argmax(axis=1)

    def update(
        self, t: int, contexts: np.ndarray | None, actions: np.ndarray, rewards: np.ndarray
    ) -> None:
        reward_model, emissions = self.problem.reward_model, self.model.emissions
        if isinstance(reward_model, Categorical) and emissions is not None:  # log O[s, A_t, o_t]
            log_lik = reward_model.outcome_log_likelihood(emissions, actions, rewards)
        else:
            means = self.predicted(t, contexts)
            pulled = np.ascontiguousarray(means[self._runs, :, actions].T)  # (S, R)
            log_lik = reward_model.log_likelihood(rewards, pulled)
        self._filter = filter_step(self._filter, log_lik, self._transitions)

    def belief(self) -> Belief | None:
        return self._belief
