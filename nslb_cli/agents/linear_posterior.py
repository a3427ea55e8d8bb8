"""Bayesian linear regression posteriors of the reward parameters, per particle, for umTS.

Contexts ``X_t`` (``K`` arms, ``d`` features), ``mu(a, X, s) = X[a] · theta_s`` and, per
particle and state, ``theta_s ~ N(m_s, C_s)``. One reward ``r`` with features ``x`` (the
Kalman / recursive least-squares step, with ``y = C x``)::

    m <- m + y (r - x' m) / (x' y + sigma^2),   C <- C - y y' / (x' y + sigma^2)

``C`` stays exactly symmetric: ``y_j y_k`` is computed once for both ``(j, k)`` and
``(k, j)``. The predictive of the reward in state ``s`` is ``N(x' m_s, x' C_s x + sigma^2)``.

Shared statistics. Resampling copies particles, and copies that then assign the same
states to the same rewards keep identical statistics: on ML-100K with 100 particles a
run holds 20-90 distinct ``(m, C)`` among its 500 particle-state pairs. So each run keeps
a pool of statistics and every particle-state pair points to a pool slot (``slot``), with
reference counts (``refs``) and a stack of free slots (``free``, ``n_free``). The
predictive is computed once per live slot; an update writes in place when every
reference to the slot moves with it, else into a fresh slot that the updated particles
share; resampling only moves references. The pool has ``N · S`` slots, enough when no
two pairs share; the slots never used are never touched. The numbers are those of one
``(m, C)`` per particle and state.

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
    slot: np.ndarray,
    refs: np.ndarray,
    free: np.ndarray,
    n_free: np.ndarray,
    contexts: np.ndarray,
    actions: np.ndarray,
    rewards: np.ndarray,
    noise_var: float,
    threshold: float,
    scheme: int,
    resamples: np.ndarray,
) -> None:
    R, N, S = slot.shape
    P, d = mean.shape[1], mean.shape[2]
    for r in range(R):
        generator = generators[r]
        x = contexts[r, actions[r]]
        # the predictive of every live slot; y = C x, as sum_k x_k C[k, :] (C symmetric)
        y = np.empty((P, d))
        slot_mean = np.empty(P)
        slot_var = np.empty(P)
        for p in range(P):
            if refs[r, p] == 0:
                continue
            y[p] = 0.0
            for k in range(d):
                for j in range(d):
                    y[p, j] += x[k] * cov[r, p, k, j]
            slot_mean[p] = 0.0
            slot_var[p] = noise_var
            for j in range(d):
                slot_mean[p] += x[j] * mean[r, p, j]
                slot_var[p] += x[j] * y[p, j]
        pulled_mean = np.empty((N, S))
        pulled_var = np.empty((N, S))
        for i in range(N):
            for s in range(S):
                pulled_mean[i, s] = slot_mean[slot[r, i, s]]
                pulled_var[i, s] = slot_var[slot[r, i, s]]
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
        # the update of the slot of (i, B_t^i): in place if all its references move with it
        moving = np.zeros(P, dtype=np.int64)
        for i in range(N):
            moving[slot[r, i, previous[r, i]]] += 1
        target = np.full(P, -1)
        for i in range(N):
            p = slot[r, i, previous[r, i]]
            if target[p] < 0:
                q = p
                if moving[p] < refs[r, p]:
                    n_free[r] -= 1
                    q = free[r, n_free[r]]
                    mean[r, q] = mean[r, p]
                    cov[r, q] = cov[r, p]
                    refs[r, p] -= moving[p]
                    refs[r, q] = moving[p]
                scale = 1.0 / slot_var[p]
                step = (rewards[r] - slot_mean[p]) * scale
                for j in range(d):
                    mean[r, q, j] += y[p, j] * step
                    for k in range(d):
                        cov[r, q, j, k] -= y[p, j] * y[p, k] * scale
                target[p] = q
            slot[r, i, previous[r, i]] = target[p]
        ancestors = np.empty(N, dtype=np.int64)
        if pf.resample(r, generator, log_weights, previous, counts, threshold, scheme, ancestors):
            resamples[r] += 1
            for i in range(N):
                a = ancestors[i]
                if a == i:
                    continue
                for s in range(S):
                    old, new = slot[r, i, s], slot[r, a, s]
                    refs[r, new] += 1
                    refs[r, old] -= 1
                    if refs[r, old] == 0:
                        free[r, n_free[r]] = old
                        n_free[r] += 1
                    slot[r, i, s] = new


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
    R, M = particles.shape
    P, d = mean.shape[1], mean.shape[2]
    K = contexts.shape[1]
    draws = np.zeros((R, K))
    for r in range(R):
        # sum_m w_m m_m and sum_m w_m^2 C_m, gathered per slot
        first = np.zeros(P)
        second = np.zeros(P)
        for m in range(M):
            p = slot[r, particles[r, m], states[r, m]]
            first[p] += weights[r, m]
            second[p] += weights[r, m] * weights[r, m]
        centre = np.zeros(d)
        spread = JITTER * np.eye(d)
        for p in range(P):
            if second[p] == 0.0:
                continue
            for j in range(d):
                centre[j] += first[p] * mean[r, p, j]
                for k in range(d):
                    spread[j, k] += second[p] * cov[r, p, j, k]
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
    """Bayesian linear regression posteriors of ``theta_s`` per particle (contextual), in a
    pool of shared statistics per run (see the module docstring)."""

    def __init__(self, model: OfflineModel, n_particles: int, noise_var: float) -> None:
        assert model.covariance is not None
        R, S, d = model.means.shape
        P = n_particles * S
        self.pool_mean = np.empty((R, P, d))
        self.pool_cov = np.empty((R, P, d, d))
        self.pool_mean[:, :S] = model.means
        self.pool_cov[:, :S] = 0.5 * (model.covariance + np.swapaxes(model.covariance, -1, -2))
        self.slot = np.repeat(np.arange(S)[None, None], R * n_particles, axis=0).reshape(
            R, n_particles, S
        )
        self.refs = np.zeros((R, P), dtype=np.int64)
        self.refs[:, :S] = n_particles
        self.free = np.repeat(np.arange(P - 1, S - 1, -1)[None], R, axis=0)  # lowest on top
        self.n_free = np.full(R, P - S)
        self.noise_var = noise_var

    @property
    def mean(self) -> np.ndarray:
        """``m`` of every particle and state, ``(R, N, S, d)`` (a copy)."""
        return self.pool_mean[np.arange(len(self.slot))[:, None, None], self.slot]

    @property
    def cov(self) -> np.ndarray:
        """``C`` of every particle and state, ``(R, N, S, d, d)`` (a copy)."""
        return self.pool_cov[np.arange(len(self.slot))[:, None, None], self.slot]

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
            self.pool_mean,
            self.pool_cov,
            self.slot,
            self.refs,
            self.free,
            self.n_free,
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
            rng.typed(),
            self.pool_mean,
            self.pool_cov,
            self.slot,
            contexts,
            particles,
            states,
            weights,
        )
