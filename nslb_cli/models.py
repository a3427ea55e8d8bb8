"""The offline model: what an agent is told about the environment, for a batch of runs.

All arrays carry a leading runs axis ``R``; ``S`` latent states, ``K`` arms.

Two reward models share one interface, :meth:`OfflineModel.expected_rewards`:

* multi-armed (no context): ``mu(a, s) = means[s, a]``, with an independent Gaussian prior
  of standard deviation ``mean_sd[s, a]`` around it;
* linear (contexts ``X_t`` of shape ``(K, d)``): ``mu(a, X_t, s) = X_t[a] · means[s]``,
  with a Gaussian prior of covariance ``covariance[s]`` around ``means[s]``.

The point estimate is used by mTS, SW-mUCB and Exp4.S; the prior by umTS. With zero prior
spread the model is *known*. Transitions likewise: a point estimate ``phi`` and, when
uncertain, Dirichlet concentrations ``alpha`` whose mean is ``phi``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Problem:
    """The shape of the problem, known to every agent (model-based or not)."""

    n_arms: int
    n_states: int
    horizon: int
    sigma: float
    n_runs: int


@dataclass(frozen=True)
class OfflineModel:
    """What the model-based agents are given (SPEC §3).

    Attributes:
        means: ``(R, S, K)`` point estimate of ``mu(a, s)`` (the prior mean); for a linear
            model ``(R, S, d)``, the reward parameter ``theta_s`` of each state.
        mean_sd: ``(R, S, K)`` prior standard deviation of ``mu(a, s)``; 0 where known
            (multi-armed models only).
        transitions: ``(R, S, S)`` point estimate of ``phi`` (rows sum to one).
        concentration: ``(R, S, S)`` Dirichlet prior on the rows of ``phi``
            (``phi_s ~ Dir(concentration[s])``), or ``None`` when ``phi`` is known.
        initial: ``(R, S)`` distribution of the first latent state ``P_1``.
        covariance: ``(R, S, d, d)`` prior covariance of ``theta_s`` (linear models only).
    """

    means: np.ndarray
    mean_sd: np.ndarray
    transitions: np.ndarray
    concentration: np.ndarray | None
    initial: np.ndarray
    covariance: np.ndarray | None = None

    @property
    def linear(self) -> bool:
        return self.covariance is not None

    def expected_rewards(self, contexts: np.ndarray | None) -> np.ndarray:
        """``mu(a, X_t, s)`` under the point estimate, shape ``(R, S, K)``.

        Multi-armed: ``means`` itself. Linear: ``X_t[a] · theta_s`` for contexts of shape
        ``(R, K, d)``, as one ``(S, d) × (d, K)`` product per run: the stacked matmul calls
        BLAS matrix by matrix, so a run's numbers do not depend on its batch (tested), and no
        ``(R, S, K, d)`` temporary is formed.
        """
        if contexts is None:
            return self.means
        return self.means @ np.swapaxes(contexts, -1, -2)
