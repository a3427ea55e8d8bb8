"""Per-particle conjugate Gaussian posteriors of the reward parameters, for umTS.

Every particle ``i`` of every run keeps, for every latent state ``s``, the posterior of the
reward parameters given the rewards its trajectory assigns to ``s``. Rewards are
``R = mu(A, X, s) + N(0, sigma^2)`` with known ``sigma``. Two families share one
interface: :class:`ArmPosterior` here and
:class:`~nslb_cli.agents.linear_posterior.LinearPosterior`.

:class:`ArmPosterior` (multi-armed): independent ``mu(a, s) ~ N(mean_{s,a}, var_{s,a})``.
One reward ``r`` of arm ``a``::

    mean <- (sigma^2 mean + var r) / (sigma^2 + var),   var <- var sigma^2 / (sigma^2 + var)

``step`` is the whole particle-filter update of a round, compiled and fused per run so a
run's statistics are read once from memory: the predictive ``N(mean_{s,A_t},
var_{s,A_t} + sigma^2)`` of every particle and state, the latent-state proposal and weights
(:func:`nslb_cli.agents.particle_filter.propose`), the update of state ``B_t^i``'s
statistics, and resampling.

Acting needs draws of ``M(a) = sum_m w_m mu^{i_m}(a)``, a weighted sum over particles
``i_m`` (in states ``B^{i_m}``) of ``mu^{i_m}(a)`` sampled from each particle's posterior.
The particles' draws are independent Gaussians, so ``M`` is drawn from its exact law, per
arm ``N(sum_m w_m mean_m, sum_m w_m^2 var_m)``, with one normal per arm. One particle with
weight one is a Thompson draw of that particle's ``mu``.

Both families start from the offline model's prior; a zero prior spread is a known model.
Arrays are ``(R, N, S, …)``: runs, particles, states (see :mod:`nslb_cli.agents.jit`).
"""

from __future__ import annotations

import numpy as np
from numba.typed import List

from nslb_cli.agents import particle_filter as pf
from nslb_cli.agents.jit import jit
from nslb_cli.agents.linear_posterior import LinearPosterior
from nslb_cli.models import OfflineModel
from nslb_cli.rng import BatchRNG


@jit
def _arm_step(
    generators: List,
    log_weights: np.ndarray,
    previous: np.ndarray,
    counts: np.ndarray | None,
    started: bool,
    initial: np.ndarray,
    transitions: np.ndarray,
    mean: np.ndarray,
    var: np.ndarray,
    actions: np.ndarray,
    rewards: np.ndarray,
    noise_var: float,
    threshold: float,
    scheme: int,
    resamples: np.ndarray,
) -> None:
    R, N, S, _ = mean.shape
    for r in range(R):
        generator, a = generators[r], actions[r]
        pulled_mean = np.empty((N, S))
        pulled_var = np.empty((N, S))
        for i in range(N):
            for s in range(S):
                pulled_mean[i, s] = mean[r, i, s, a]
                pulled_var[i, s] = var[r, i, s, a] + noise_var
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
            v = var[r, i, s, a]
            mean[r, i, s, a] = (noise_var * mean[r, i, s, a] + v * rewards[r]) / (noise_var + v)
            var[r, i, s, a] = v * noise_var / (noise_var + v)
        ancestors = np.empty(N, dtype=np.int64)
        if pf.resample(r, generator, log_weights, previous, counts, threshold, scheme, ancestors):
            resamples[r] += 1
            for i in range(N):
                if ancestors[i] != i:
                    mean[r, i] = mean[r, ancestors[i]]
                    var[r, i] = var[r, ancestors[i]]


@jit
def _arm_mixture(
    generators: List,
    mean: np.ndarray,
    var: np.ndarray,
    particles: np.ndarray,
    states: np.ndarray,
    weights: np.ndarray,
) -> np.ndarray:
    R, M = particles.shape
    K = mean.shape[3]
    draws = np.zeros((R, K))
    for r in range(R):
        spread = np.zeros(K)
        for m in range(M):
            i, s, w = particles[r, m], states[r, m], weights[r, m]
            for a in range(K):
                draws[r, a] += w * mean[r, i, s, a]
                spread[a] += w * w * var[r, i, s, a]
        generator = generators[r]
        for a in range(K):
            draws[r, a] += np.sqrt(spread[a]) * generator.standard_normal()
    return draws


class ArmPosterior:
    """Independent Gaussian posteriors of ``mu(a, s)`` per particle (multi-armed)."""

    def __init__(self, model: OfflineModel, n_particles: int, noise_var: float) -> None:
        self.mean = np.repeat(model.means[:, None], n_particles, axis=1).astype(float)
        self.var = np.repeat(model.mean_sd[:, None] ** 2, n_particles, axis=1).astype(float)
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
        """One update with ``(A_t, R_t)``, in place: the weights, the latent states
        (:mod:`nslb_cli.agents.particle_filter`) and the statistics; resampling with
        ``SCHEMES[scheme]`` when the ESS is below ``threshold · N``, counted in
        ``resamples``."""
        _arm_step(
            rng.typed(),
            log_weights,
            *latent,
            self.mean,
            self.var,
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
        """A draw of ``sum_m w_m mu^{i_m}(a)`` with ``i_m = particles[r, m]`` in state
        ``states[r, m]`` and ``w_m = weights[r, m]``: ``(R, K)``, ``K`` normals per run."""
        return _arm_mixture(rng.typed(), self.mean, self.var, particles, states, weights)


def reward_posterior(
    model: OfflineModel, n_particles: int, noise_var: float
) -> ArmPosterior | LinearPosterior:
    """The posterior family that matches the offline model's reward model."""
    family = LinearPosterior if model.linear else ArmPosterior
    return family(model, n_particles, noise_var)
