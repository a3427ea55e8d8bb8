"""umTS: uncertainty-aware model-based Thompson sampling by particle filtering (Algorithm 3).

Model. Rewards are ``R_t ~ N(mu(A_t, X_t, S_t), sigma^2)`` with known ``sigma``. The reward
parameters have the offline model's Gaussian prior (per arm and state in the multi-armed
case, per state over ``theta_s`` in the linear case); each transition row
``phi_s ~ Dir(alpha_s)``; ``S_1 ~ P_1``.

Particles. Particle ``i`` carries a latent trajectory, summarised by its last state
``B_{t-1}^i``, its Dirichlet posterior counts ``alpha_s + #{transitions s -> s'}``, and the
conjugate Gaussian posterior of the reward parameters of every state given the rewards its
trajectory assigns to that state (:mod:`nslb_cli.agents.posteriors`, which gives the
updates). The posterior predictive of the next reward in state ``s`` is Gaussian, with the
posterior variance of ``mu(A_t, X_t, s)`` plus ``sigma^2``.

Update after observing ``(A_t, R_t)`` (the paper's equations (3)-(4)), for every particle:

1. sample ``phi_{B_{t-1}} ~ Dir(counts[B_{t-1}])`` (``P_1`` in the first round; the
   given matrix when transitions are known);
2. ``q(s) = phi_{B_{t-1}, s} · N(R_t; m_s, v_s + sigma^2)``, with ``m_s`` and ``v_s`` the
   posterior mean and variance of ``mu(A_t, X_t, s)``;
3. ``w ← w · sum_s q(s)``: the incremental weight is the predictive likelihood, the ratio
   of equation (4) when ``B_t`` is proposed from its local posterior;
4. ``B_t ~ q / sum_s q(s)``; add the transition ``B_{t-1} -> B_t`` to the counts and
   ``R_t`` to the reward posterior of state ``B_t``;
5. resample (scheme ``resampling``) when ``ESS = 1 / sum_i w_i^2 < resample_threshold · N``.

Acting in round ``t`` (before ``R_t``): every particle draws its believed state
``B_t^i ~ P(· | B_{t-1}^i)`` from its posterior-predictive transition row (Dirichlet
posterior mean, ``counts / sum(counts)``) and samples ``mu^i(a) = mu(a, X_t, B_t^i;
theta^i)`` with ``theta^i`` drawn from its reward posterior of that state. Then

* ``mean`` (the paper): ``A_t = argmax_a sum_i w_i mu^i(a)``. As ``N`` grows the average
  tends to the posterior mean of ``mu(a)``, so this play becomes greedy rather than
  Thompson sampling. The reported belief is the most probable state of the particle
  posterior.
* ``sample``: draw one particle ``j ~ w`` and play ``argmax_a mu^j(a)``, a draw from the
  particle approximation of the joint posterior of ``(S_t, theta)``: Thompson sampling.
  The reported belief is ``B_t^j``.

In both modes ``p_true_state`` is the particle posterior's mass on the true state.

All weights are kept in log space.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nslb_cli import params as check
from nslb_cli.agents.base import Agent, Belief
from nslb_cli.agents.posteriors import reward_posterior
from nslb_cli.agents.resampling import SCHEMES, resample
from nslb_cli.models import OfflineModel, Problem
from nslb_cli.rewards import gaussian_log_likelihood
from nslb_cli.rng import BatchRNG, categorical


@dataclass
class UMTSParams:
    name: str = "umts"
    num_particles: int = 100
    resample_threshold: float = 0.5
    resampling: str = "systematic"
    action_selection: str = "mean"

    def __post_init__(self) -> None:
        check.positive(self.num_particles, "num_particles")
        check.probability(self.resample_threshold, "resample_threshold")
        check.one_of(self.resampling, SCHEMES, "resampling")
        check.one_of(self.action_selection, ("mean", "sample"), "action_selection")


def _normalise(log_weights: np.ndarray) -> np.ndarray:
    w = np.exp(log_weights - log_weights.max(axis=-1, keepdims=True))
    return w / w.sum(axis=-1, keepdims=True)


class UncertainModelThompsonSampling(Agent):
    """umTS with ``num_particles`` particles per run; see the module docstring."""

    Params = UMTSParams

    def __init__(
        self, params: UMTSParams, problem: Problem, model: OfflineModel, rng: BatchRNG
    ) -> None:
        super().__init__(params, problem, model, rng)
        R, N = problem.n_runs, params.num_particles
        self.n_particles = N
        self.log_weights = np.full((R, N), -np.log(N))
        self.previous = np.zeros((R, N), dtype=np.int64)
        self.started = False
        self.counts = (
            None
            if model.concentration is None
            else np.repeat(model.concentration[:, None], N, axis=1).astype(float)
        )
        self.rewards = reward_posterior(model, N, problem.sigma**2)
        self.resamples = np.zeros(R, dtype=np.int64)
        self._runs = np.arange(R)[:, None]
        self._particles = np.arange(N)[None, :]
        self._belief: Belief | None = None

    def state_predictive(self) -> np.ndarray:
        """``P(B_t = s | particle)`` before ``R_t``, shape ``(R, N, S)``."""
        R, N, S = self.problem.n_runs, self.n_particles, self.problem.n_states
        if not self.started:
            return np.broadcast_to(self.model.initial[:, None, :], (R, N, S))
        if self.counts is None:
            return self.model.transitions[self._runs, self.previous]
        rows = self.counts[self._runs, self._particles, self.previous]
        return rows / rows.sum(axis=-1, keepdims=True)

    def state_posterior(self) -> np.ndarray:
        """The particle estimate of ``P(S_t = s | H_t)``, shape ``(R, S)``."""
        weights = _normalise(self.log_weights)
        return (weights[:, :, None] * self.state_predictive()).sum(axis=1)

    def act(self, t: int, contexts: np.ndarray | None) -> np.ndarray:
        predictive = self.state_predictive()
        states = categorical(predictive, self.rng.random((self.n_particles,)))  # (R, N)
        theta = self.rewards.sample_rewards(states, contexts, self.rng)  # (R, N, K)
        weights = _normalise(self.log_weights)
        posterior = (weights[:, :, None] * predictive).sum(axis=1)
        if self.params.action_selection == "mean":
            actions = (weights[:, :, None] * theta).sum(axis=1).argmax(axis=1)
            believed = posterior.argmax(axis=1)
        else:
            chosen = categorical(weights, self.rng.random())
            runs = self._runs[:, 0]
            actions = theta[runs, chosen].argmax(axis=1)
            believed = states[runs, chosen]
        self._belief = Belief(state=believed, posterior=posterior)
        return actions

    def update(
        self, t: int, contexts: np.ndarray | None, actions: np.ndarray, rewards: np.ndarray
    ) -> None:
        N = self.n_particles
        if self.started and self.counts is not None:
            rows = self.counts[self._runs, self._particles, self.previous]
            transition = self.rng.standard_gamma(rows)
            transition /= transition.sum(axis=-1, keepdims=True)
        else:
            transition = self.state_predictive()
        pulled_mean, pulled_var = self.rewards.predictive(contexts, actions)  # (R, N, S)
        with np.errstate(divide="ignore"):
            log_q = np.log(transition) + gaussian_log_likelihood(
                rewards[:, None, None], pulled_mean, pulled_var + self.problem.sigma**2
            )
        top = log_q.max(axis=-1, keepdims=True)
        q = np.exp(log_q - top)
        total = q.sum(axis=-1)
        self.log_weights += np.log(total) + top[..., 0]
        new = categorical(q, self.rng.random((N,)))
        if self.started and self.counts is not None:
            self.counts[self._runs, self._particles, self.previous, new] += 1.0
        self.rewards.observe(new, contexts, actions, rewards)
        self.previous = new
        self.started = True
        self.log_weights -= self.log_weights.max(axis=1, keepdims=True)
        self._resample_degenerate_runs()

    def _resample_degenerate_runs(self) -> None:
        weights = _normalise(self.log_weights)
        ess = 1.0 / (weights**2).sum(axis=1)
        degenerate = np.flatnonzero(ess < self.params.resample_threshold * self.n_particles)
        for run, generator in zip(degenerate, self.rng.for_runs(degenerate), strict=True):
            ancestors = resample(weights[run], self.params.resampling, generator)
            self.previous[run] = self.previous[run, ancestors]
            self.rewards.select(run, ancestors)
            if self.counts is not None:
                self.counts[run] = self.counts[run, ancestors]
            self.log_weights[run] = 0.0
            self.resamples[run] += 1

    def belief(self) -> Belief | None:
        return self._belief

    def summary(self) -> dict[str, np.ndarray]:
        return {"resamples": self.resamples}
