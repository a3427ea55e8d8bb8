"""Bayesian linear regression posteriors of the reward parameters, per particle, for umTS.

Contexts ``X_t`` (``K`` arms, ``d`` features), ``mu(a, X, s) = X[a] · theta_s`` and, per
particle and state, ``theta_s ~ N(m_s, C_s)``. One reward ``r`` with features ``x`` (the
Kalman / recursive least-squares step, with ``y = C x``)::

    m <- m + y (r - x' m) / (x' y + sigma^2),   C <- C - y y' / (x' y + sigma^2)

``C`` stays exactly symmetric: ``y_j y_k`` is computed once for both ``(j, k)`` and
``(k, j)``. The predictive of the reward in state ``s`` is ``N(x' m_s, x' C_s x + sigma^2)``.

Acting draws ``M(a) = X[a] · theta`` with ``theta ~ N(sum_m w_m m_m, sum_m w_m^2 C_m)``, the
exact law of ``sum_m w_m X[a] · theta^{i_m}`` for independent particle draws (see
:mod:`nslb_cli.agents.posteriors`): ``d`` normals per run.
"""

from __future__ import annotations

import numpy as np
from numba.typed import List

from nslb_cli.agents import particle_filter as pf
from nslb_cli.agents.jit import jit
from nslb_cli.models import OfflineModel
from nslb_cli.rng import BatchRNG

JITTER = 1e-10  # added to covariance diagonals before a Cholesky factorisation


@jit
def _linear_step(
    generators: List,
    log_weights: np.ndarray,
    previous: np.ndarray,
    counts: np.ndarray | None,
    started: bool,
    initial: np.ndarray,
    transitions: np.ndarray,
    mean: np.ndarray,
    cov: np.ndarray,
    contexts: np.ndarray,
    actions: np.ndarray,
    rewards: np.ndarray,
    noise_var: float,
    threshold: float,
    scheme: int,
    resamples: np.ndarray,
) -> None:
    R, N, S, d = mean.shape
    for r in range(R):
        generator = generators[r]
        x = contexts[r, actions[r]]
        # the predictive of every particle and state; y = C x, as sum_k x_k C[k, :]
        y = np.empty((N, S, d))
        pulled_mean = np.empty((N, S))
        pulled_var = np.empty((N, S))
        for i in range(N):
            for s in range(S):
                y[i, s] = 0.0
                for k in range(d):
                    for j in range(d):
                        y[i, s, j] += x[k] * cov[r, i, s, k, j]
                pulled_mean[i, s] = 0.0
                pulled_var[i, s] = noise_var
                for j in range(d):
                    pulled_mean[i, s] += x[j] * mean[r, i, s, j]
                    pulled_var[i, s] += x[j] * y[i, s, j]
        pf.propose(
            r,
            generator,
            log_weights,
            previous,
            counts,
            started,
            initial,
            transitions,
            pulled_mean,
            pulled_var,
            rewards[r],
        )
        for i in range(N):
            s = previous[r, i]
            scale = 1.0 / pulled_var[i, s]
            step = (rewards[r] - pulled_mean[i, s]) * scale
            for j in range(d):
                mean[r, i, s, j] += y[i, s, j] * step
                for k in range(d):
                    cov[r, i, s, j, k] -= y[i, s, j] * y[i, s, k] * scale
        ancestors = np.empty(N, dtype=np.int64)
        if pf.resample(r, generator, log_weights, previous, counts, threshold, scheme, ancestors):
            resamples[r] += 1
            for i in range(N):
                if ancestors[i] != i:
                    mean[r, i] = mean[r, ancestors[i]]
                    cov[r, i] = cov[r, ancestors[i]]


@jit
def _linear_mixture(
    generators: List,
    mean: np.ndarray,
    cov: np.ndarray,
    contexts: np.ndarray,
    particles: np.ndarray,
    states: np.ndarray,
    weights: np.ndarray,
) -> np.ndarray:
    R, M = particles.shape
    K, d = contexts.shape[1], contexts.shape[2]
    draws = np.zeros((R, K))
    for r in range(R):
        centre = np.zeros(d)
        spread = JITTER * np.eye(d)
        for m in range(M):
            i, s, w = particles[r, m], states[r, m], weights[r, m]
            for j in range(d):
                centre[j] += w * mean[r, i, s, j]
                for k in range(d):
                    spread[j, k] += w * w * cov[r, i, s, j, k]
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


class LinearPosterior:
    """Bayesian linear regression posteriors of ``theta_s`` per particle (contextual)."""

    def __init__(self, model: OfflineModel, n_particles: int, noise_var: float) -> None:
        assert model.covariance is not None
        prior = 0.5 * (model.covariance + np.swapaxes(model.covariance, -1, -2))
        self.mean = np.repeat(model.means[:, None], n_particles, axis=1).astype(float)
        self.cov = np.repeat(prior[:, None], n_particles, axis=1).astype(float)
        self.noise_var = noise_var

    def step(
        self,
        rng: BatchRNG,
        log_weights: np.ndarray,
        latent: pf.Latent,
        contexts: np.ndarray | None,
        actions: np.ndarray,
        rewards: np.ndarray,
        threshold: float,
        scheme: int,
        resamples: np.ndarray,
    ) -> None:
        """One update with ``(A_t, X_t, R_t)``; see :meth:`.ArmPosterior.step`."""
        _linear_step(
            rng.typed(),
            log_weights,
            *latent,
            self.mean,
            self.cov,
            contexts,
            actions,
            rewards,
            self.noise_var,
            threshold,
            scheme,
            resamples,
        )

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
        return _linear_mixture(
            rng.typed(), self.mean, self.cov, contexts, particles, states, weights
        )
