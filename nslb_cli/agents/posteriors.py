"""Per-particle conjugate Gaussian posteriors of the reward parameters, for umTS.

Every particle ``i`` of every run keeps, for every latent state ``s``, the posterior of the
reward parameters given the rewards its trajectory assigns to ``s``. Rewards are
``R = mu(A, X, s) + N(0, sigma^2)`` with known ``sigma``. Two models:

* :class:`ArmPosterior` (multi-armed): independent ``mu(a, s) ~ N(mean_{s,a}, var_{s,a})``.
  One reward ``r`` of arm ``a``::

      mean <- (sigma^2 mean + var r) / (sigma^2 + var),   var <- var sigma^2 / (sigma^2 + var)

* :class:`LinearPosterior` (contexts ``X_t``, ``mu(a, X, s) = X[a] · theta_s``): Bayesian
  linear regression, ``theta_s ~ N(m_s, C_s)``. One reward ``r`` with features ``x``
  (the Kalman / recursive least-squares step)::

      k = C x / (x' C x + sigma^2),   m <- m + k (r - x' m),   C <- C - k (C x)'

Both start from the offline model's prior; a zero prior spread is a known model.
All arrays are ``(R, N, S, …)``: runs, particles, states.
"""

from __future__ import annotations

import numpy as np

from nslb_cli.models import OfflineModel
from nslb_cli.rng import BatchRNG

JITTER = 1e-10  # added to covariance diagonals before a Cholesky factorisation


class ArmPosterior:
    """Independent Gaussian posteriors of ``mu(a, s)`` per particle (multi-armed)."""

    def __init__(self, model: OfflineModel, n_particles: int, noise_var: float) -> None:
        self.mean = np.repeat(model.means[:, None], n_particles, axis=1).astype(float)
        self.var = np.repeat(model.mean_sd[:, None] ** 2, n_particles, axis=1).astype(float)
        self.noise_var = noise_var
        self._runs = np.arange(self.mean.shape[0])[:, None]
        self._particles = np.arange(n_particles)[None, :]

    def sample_rewards(
        self, states: np.ndarray, contexts: np.ndarray | None, rng: BatchRNG
    ) -> np.ndarray:
        """``mu^i(a)`` for each particle's state ``states[r, i]``, sampled: ``(R, N, K)``."""
        index = (self._runs, self._particles, states)
        mean = self.mean[index]
        return mean + np.sqrt(self.var[index]) * rng.normal(mean.shape[1:])

    def predictive(
        self, contexts: np.ndarray | None, actions: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Mean and variance of ``mu(A_t, X_t, s)`` for every particle and state: ``(R, N, S)``."""
        pulled = (self._runs, self._particles, slice(None), actions[:, None])
        return self.mean[pulled], self.var[pulled]

    def observe(
        self,
        states: np.ndarray,
        contexts: np.ndarray | None,
        actions: np.ndarray,
        rewards: np.ndarray,
    ) -> None:
        """Add reward ``R_t`` of arm ``A_t`` to the posterior of state ``states[r, i]``."""
        entry = (self._runs, self._particles, states, actions[:, None])
        var = self.var[entry]
        noise = self.noise_var
        self.mean[entry] = (noise * self.mean[entry] + var * rewards[:, None]) / (noise + var)
        self.var[entry] = var * noise / (noise + var)

    def select(self, run: int, ancestors: np.ndarray) -> None:
        """Resampling: the particles of ``run`` become copies of ``ancestors``."""
        self.mean[run] = self.mean[run, ancestors]
        self.var[run] = self.var[run, ancestors]


class LinearPosterior:
    """Bayesian linear regression posteriors of ``theta_s`` per particle (contextual)."""

    def __init__(self, model: OfflineModel, n_particles: int, noise_var: float) -> None:
        assert model.covariance is not None
        self.mean = np.repeat(model.means[:, None], n_particles, axis=1).astype(float)
        self.cov = np.repeat(model.covariance[:, None], n_particles, axis=1).astype(float)
        self.noise_var = noise_var
        self._runs = np.arange(self.mean.shape[0])[:, None]
        self._particles = np.arange(n_particles)[None, :]
        self._eye = np.eye(self.mean.shape[-1])

    def sample_rewards(
        self, states: np.ndarray, contexts: np.ndarray | None, rng: BatchRNG
    ) -> np.ndarray:
        """``X_t[a] · theta^i`` with ``theta^i ~ N(m, C)`` of state ``states[r, i]``."""
        index = (self._runs, self._particles, states)
        mean, cov = self.mean[index], self.cov[index]
        factor = np.linalg.cholesky(cov + JITTER * self._eye)
        theta = mean + (factor * rng.normal(mean.shape[1:])[:, :, None, :]).sum(axis=-1)
        return (contexts[:, None, :, :] * theta[:, :, None, :]).sum(axis=-1)

    def predictive(
        self, contexts: np.ndarray | None, actions: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Mean ``x' m_s`` and variance ``x' C_s x`` with ``x = X_t[A_t]``: ``(R, N, S)``."""
        x = contexts[np.arange(len(actions)), actions][:, None, None, :]  # (R, 1, 1, d)
        mean = (self.mean * x).sum(axis=-1)
        var = ((self.cov * x[..., None, :]).sum(axis=-1) * x).sum(axis=-1)
        return mean, var

    def observe(
        self,
        states: np.ndarray,
        contexts: np.ndarray | None,
        actions: np.ndarray,
        rewards: np.ndarray,
    ) -> None:
        """One recursive least-squares step for state ``states[r, i]`` of every particle."""
        x = contexts[np.arange(len(actions)), actions][:, None, :]  # (R, 1, d)
        index = (self._runs, self._particles, states)
        mean, cov = self.mean[index], self.cov[index]
        cov_x = (cov * x[..., None, :]).sum(axis=-1)  # (R, N, d)
        gain = cov_x / ((cov_x * x).sum(axis=-1, keepdims=True) + self.noise_var)
        residual = rewards[:, None] - (mean * x).sum(axis=-1)
        self.mean[index] = mean + gain * residual[..., None]
        updated = cov - gain[..., :, None] * cov_x[..., None, :]
        self.cov[index] = 0.5 * (updated + np.swapaxes(updated, -1, -2))

    def select(self, run: int, ancestors: np.ndarray) -> None:
        """Resampling: the particles of ``run`` become copies of ``ancestors``."""
        self.mean[run] = self.mean[run, ancestors]
        self.cov[run] = self.cov[run, ancestors]


def reward_posterior(
    model: OfflineModel, n_particles: int, noise_var: float
) -> ArmPosterior | LinearPosterior:
    """The posterior family that matches the offline model's reward model."""
    family = LinearPosterior if model.linear else ArmPosterior
    return family(model, n_particles, noise_var)
