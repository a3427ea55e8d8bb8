"""Bayesian linear regression posteriors of the reward parameters, per particle, for umTS.

Contexts ``X_t`` (``K`` arms, ``d`` features), ``mu(a, X, s) = X[a] · theta_s`` and, per
particle and state, ``theta_s ~ N(m_s, C_s)``. One reward ``r`` with features ``x`` (the
Kalman / recursive least-squares step, with ``y = C x``):

    m <- m + y (r - x' m) / (x' y + sigma^2),   C <- C - y y' / (x' y + sigma^2)

``C`` stays exactly symmetric: ``y_j y_k`` is computed once for both ``(j, k)`` and
``(k, j)``. The predictive of the reward in state ``s`` is ``N(x' m_s, x' C_s x + sigma^2)``.

The update is ``step``'s, on a pool of slots
(``pool``). Acting draws ``M(a) = X[a] · theta`` with
``theta ~ N(sum_m w_m m_m, sum_m w_m^2 C_m)``, the exact law of ``sum_m w_m X[a] · theta^{i_m}``
for independent particle draws: ``d`` normals per run.
"""

from __future__ import annotations

import numpy as np
from numba.typed import List

from nslb_cli.agents.umts.pool import SlotPool, gather_weights
from nslb_cli.agents.umts.step import PooledPosterior
from nslb_cli.bandit.problem import OfflineModel
from nslb_cli.bandit.rewards import GAUSSIAN_KERNEL
from nslb_cli.bandit.rng import BatchRNG
from nslb_cli.compiled.jit import jit

JITTER = 1e-10  # added to covariance diagonals before a Cholesky factorisation


@jit
def _linear_mixture(
    generators: List,
    mean: np.ndarray,
    cov: np.ndarray,
    slot: np.ndarray,
    contexts: np.ndarray,
    particles: np.ndarray,
    states: np.ndarray,
    weights: np.ndarray,
) -> np.ndarray:
    R, P, d = mean.shape
    M, K = particles.shape[1], contexts.shape[1]
    draws = np.zeros((R, K))
    first, second, touched = np.zeros(P), np.zeros(P), np.empty(M, np.int64)
    for r in range(R):
        # sum_m w_m m_m and sum_m w_m^2 C_m, gathered per slot
        n_touched = gather_weights(r, slot, particles, states, weights, first, second, touched)
        centre = np.zeros(d)
        spread = JITTER * np.eye(d)
        for p in touched[:n_touched]:
            for j in range(d):
                centre[j] += first[p] * mean[r, p, j]
                for k in range(d):
                    spread[j, k] += second[p] * cov[r, p, j, k]
            first[p] = second[p] = 0.0
        factor = np.linalg.cholesky(spread)
        generator = generators[r]
        noise = np.empty(d)
        for k in range(d):
            noise[k] = generator.standard_normal()
        for j in range(d):
            for k in range(j + 1):
                centre[j] += factor[j, k] * noise[k]
        for a in range(K):
            for j in range(d):
                draws[r, a] += contexts[r, a, j] * centre[j]
    return draws


class LinearPosterior(PooledPosterior):
    """Bayesian linear regression posteriors of ``theta_s`` per particle (contextual), in a
    pool of statistics shared between particles (``nslb_cli.agents.umts.pool``)."""

    def __init__(self, model: OfflineModel, n_particles: int, noise_var: float) -> None:
        assert model.covariance is not None
        R, S, d = model.means.shape
        self.pool = SlotPool(R, n_particles, S)
        self.pool_mean = np.empty((R, n_particles * S, d))
        self.pool_cov = np.empty((R, n_particles * S, d, d))
        self.pool_mean[:, :S] = model.means
        self.pool_cov[:, :S] = 0.5 * (model.covariance + np.swapaxes(model.covariance, -1, -2))
        self.noise_var = noise_var
        self.stats = (self.pool_mean, self.pool_cov)
        self.model = (GAUSSIAN_KERNEL, noise_var)

    def sample_mixture(
        self,
        rng: BatchRNG,
        particles: np.ndarray,
        states: np.ndarray,
        weights: np.ndarray,
        contexts: np.ndarray | None,
    ) -> np.ndarray:
        """A draw of ``X_t[a] · sum_m w_m theta^{i_m}`` (see the module docstring):
        ``(R, K)``, ``d`` normals per run."""
        assert contexts is not None, "a linear model has contexts"
        return _linear_mixture(
            rng.typed(),
            self.pool_mean,
            self.pool_cov,
            self.pool.slot,
            contexts,
            particles,
            states,
            weights,
        )
