"""The offline model: what an agent is told about the environment, for a batch of runs.

All arrays carry a leading runs axis ``R``; ``S`` latent states, ``K`` arms.

The reward model is multi-armed: ``mu(a, s) = means[s, a]``. A point estimate (used by
mTS, SW-mUCB, Exp4.S) comes with a Gaussian prior around it (used by umTS): with
``mean_sd == 0`` the model is *known*. Transitions likewise: a point estimate ``phi`` and,
when uncertain, Dirichlet concentrations ``alpha`` whose mean is ``phi``.
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
        means: ``(R, S, K)`` point estimate of ``mu(a, s)`` (the prior mean).
        mean_sd: ``(R, S, K)`` prior standard deviation of ``mu(a, s)``; 0 where known.
        transitions: ``(R, S, S)`` point estimate of ``phi`` (rows sum to one).
        concentration: ``(R, S, S)`` Dirichlet prior on the rows of ``phi``
            (``phi_s ~ Dir(concentration[s])``), or ``None`` when ``phi`` is known.
        initial: ``(R, S)`` distribution of the first latent state ``P_1``.
    """

    means: np.ndarray
    mean_sd: np.ndarray
    transitions: np.ndarray
    concentration: np.ndarray | None
    initial: np.ndarray

    def expected_rewards(self, contexts: np.ndarray | None) -> np.ndarray:
        """``mu(a, X_t, s)`` under the point estimate, shape ``(R, S, K)``.

        Multi-armed environments have no context, so this is ``means`` itself.
        """
        return self.means
