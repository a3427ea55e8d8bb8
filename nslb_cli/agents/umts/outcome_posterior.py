"""umTS's reward side for categorical outcomes with a known observation model
(docs/design.md §4.2, "Categorical outcomes").

The likelihood of a pull is ``O[s, A_t, o_t]``, which no scalar mean gives. The pull of arm
``a`` with outcome ``o`` is seen as the click of a *virtual arm* ``a N + o`` whose known
Bernoulli mean is ``O[s, a, o]``: the predictive of a click is that mean, and a known mean is
never updated, so umTS's compiled update weighs each particle by ``O[s, a, o]`` and learns
only the transitions (its Dirichlet counts). Acting reads the known expected rewards
``mu(a, s) = sum_o O[s, a, o] r[o]``: the mixture of the particles' states is a weighted sum
of known means, without draws.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from nslb_cli.agents.umts import latent
from nslb_cli.agents.umts.arm_posterior import ArmPosterior
from nslb_cli.bandit.problem import OfflineModel
from nslb_cli.bandit.rewards import Bernoulli, Categorical
from nslb_cli.bandit.rng import BatchRNG


class OutcomePosterior(ArmPosterior):
    """Known outcome laws as point-mass Bernoulli means of ``K N`` virtual arms (module
    docstring)."""

    def __init__(self, model: OfflineModel, n_particles: int, outcomes: Categorical) -> None:
        assert model.emissions is not None
        R, S, K, N = model.emissions.shape
        virtual = dataclasses.replace(
            model, means=model.emissions.reshape(R, S, K * N), mean_sd=np.zeros((R, S, K * N))
        )
        super().__init__(virtual, n_particles, Bernoulli())
        self.outcomes = outcomes
        self.expected = model.means
        self.n_outcomes = N

    def step(
        self,
        rng: BatchRNG,
        log_weights: np.ndarray,
        filter_state: latent.Latent,
        contexts: np.ndarray | None,
        actions: np.ndarray,
        rewards: np.ndarray,
        threshold: float,
        scheme: int,
        resamples: np.ndarray,
    ) -> None:
        """The update of ``PooledPosterior`` with the click
        of virtual arm ``A_t N + o_t``."""
        outcomes = self.outcomes.outcome(rewards)
        seen = np.asarray(actions, dtype=np.int64) * self.n_outcomes + outcomes
        clicks = np.ones(len(seen))
        super().step(rng, log_weights, filter_state, contexts, seen, clicks, threshold, scheme,
                     resamples)  # fmt: skip

    def sample_mixture(
        self,
        rng: BatchRNG,
        particles: np.ndarray,
        states: np.ndarray,
        weights: np.ndarray,
        contexts: np.ndarray | None,
    ) -> np.ndarray:
        """``sum_m w_m mu(a, states[r, m])`` with the known expected rewards, ``(R, K)``."""
        means = np.take_along_axis(self.expected, states[:, :, None], axis=1)  # (R, M, K)
        return (weights[:, :, None] * means).sum(axis=1)
