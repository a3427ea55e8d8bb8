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
statistics, and resampling. Both families keep their statistics in a pool shared by the
particles (:mod:`nslb_cli.agents.pool`): predictives and updates are computed once per
distinct set of statistics; a reward on an arm whose variance is 0 (a known model)
changes nothing and is skipped.

Acting needs draws of ``M(a) = sum_m w_m mu^{i_m}(a)``, a weighted sum over particles
``i_m`` (in states ``B^{i_m}``) of ``mu^{i_m}(a)`` sampled from each particle's posterior.
The particles' draws are independent Gaussians, so ``M`` is drawn from its exact law, per
arm ``N(sum_m w_m mean_m, sum_m w_m^2 var_m)``, with one normal per arm. One particle with
weight one is a Thompson draw of that particle's ``mu``.

Both families start from the offline model's prior; a zero prior spread is a known model.
Their statistics are pool arrays ``(R, P, …)`` (runs, slots); the ``mean`` and ``var``
(``cov``) properties give them per particle and state, ``(R, N, S, …)``.
"""

from __future__ import annotations

import numpy as np
from numba.typed import List

from nslb_cli.agents import particle_filter as pf
from nslb_cli.agents.jit import jit
from nslb_cli.agents.linear_posterior import LinearPosterior
from nslb_cli.agents.pool import (
    Arrays,
    SlotPool,
    gather_weights,
    live_slots,
    move_references,
    plan_updates,
)
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
    pool: Arrays,
    actions: np.ndarray,
    rewards: np.ndarray,
    noise_var: float,
    threshold: float,
    scheme: int,
    resamples: np.ndarray,
) -> None:
    R, P, _ = mean.shape
    slot, refs = pool[0], pool[1]
    N = slot.shape[1]
    live, exponent, scale, likelihood = np.empty(P, np.int64), np.empty(P), np.empty(P), np.empty(P)
    informative = np.empty(P, np.bool_)
    moving, moved = np.zeros(P, np.int64), np.full(P, -1)
    sources, targets, ancestors = (
        np.empty(N, np.int64),
        np.empty(N, np.int64),
        np.empty(N, np.int64),
    )
    for r in range(R):
        generator, a, reward = generators[r], actions[r], rewards[r]
        n_live = live_slots(r, refs, live)
        for p in live[:n_live]:
            v = var[r, p, a] + noise_var
            exponent[p] = -0.5 * (reward - mean[r, p, a]) * (reward - mean[r, p, a]) / v
            scale[p] = 1.0 / np.sqrt(v)
            informative[p] = var[r, p, a] > 0.0
        pf.propose(
            r,
            generator,
            log_weights,
            previous,
            counts,
            started,
            initial,
            transitions,
            slot,
            live[:n_live],
            exponent,
            scale,
            likelihood,
        )
        updates = plan_updates(r, pool, previous, informative, moving, moved, sources, targets)
        for u in range(updates):
            p, q = sources[u], targets[u]
            if q != p:
                mean[r, q] = mean[r, p]
                var[r, q] = var[r, p]
            v = var[r, q, a]
            mean[r, q, a] = (noise_var * mean[r, q, a] + v * reward) / (noise_var + v)
            var[r, q, a] = v * noise_var / (noise_var + v)
        if pf.resample(r, generator, log_weights, previous, counts, threshold, scheme, ancestors):
            resamples[r] += 1
            move_references(r, pool, ancestors)


@jit
def _arm_mixture(
    generators: List,
    mean: np.ndarray,
    var: np.ndarray,
    slot: np.ndarray,
    particles: np.ndarray,
    states: np.ndarray,
    weights: np.ndarray,
) -> np.ndarray:
    R, P, K = mean.shape
    M = particles.shape[1]
    draws = np.zeros((R, K))
    first, second, touched = np.zeros(P), np.zeros(P), np.empty(M, np.int64)
    for r in range(R):
        # sum_m w_m and sum_m w_m^2 gathered per slot
        n_touched = gather_weights(r, slot, particles, states, weights, first, second, touched)
        spread = np.zeros(K)
        for p in touched[:n_touched]:
            for a in range(K):
                draws[r, a] += first[p] * mean[r, p, a]
                spread[a] += second[p] * var[r, p, a]
            first[p] = second[p] = 0.0
        generator = generators[r]
        for a in range(K):
            draws[r, a] += np.sqrt(spread[a]) * generator.standard_normal()
    return draws


class ArmPosterior:
    """Independent Gaussian posteriors of ``mu(a, s)`` per particle (multi-armed), in a pool
    of statistics shared between particles (:mod:`nslb_cli.agents.pool`)."""

    def __init__(self, model: OfflineModel, n_particles: int, noise_var: float) -> None:
        R, S, K = model.means.shape
        self.pool = SlotPool(R, n_particles, S)
        self.pool_mean = np.empty((R, n_particles * S, K))
        self.pool_var = np.empty((R, n_particles * S, K))
        self.pool_mean[:, :S] = model.means
        self.pool_var[:, :S] = model.mean_sd**2
        self.noise_var = noise_var

    @property
    def mean(self) -> np.ndarray:
        """The posterior mean of every particle, state and arm, ``(R, N, S, K)`` (a copy)."""
        return self.pool.gather(self.pool_mean)

    @property
    def var(self) -> np.ndarray:
        """The posterior variance of every particle, state and arm, ``(R, N, S, K)``."""
        return self.pool.gather(self.pool_var)

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
            self.pool_mean,
            self.pool_var,
            self.pool.arrays,
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
        return _arm_mixture(
            rng.typed(), self.pool_mean, self.pool_var, self.pool.slot, particles, states, weights
        )


def reward_posterior(
    model: OfflineModel, n_particles: int, noise_var: float
) -> ArmPosterior | LinearPosterior:
    """The posterior family that matches the offline model's reward model."""
    family = LinearPosterior if model.linear else ArmPosterior
    return family(model, n_particles, noise_var)
