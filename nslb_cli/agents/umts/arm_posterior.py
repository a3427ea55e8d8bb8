"""Per-particle conjugate posteriors of the reward parameters, for umTS.

Each particle keeps, per latent state, an independent conjugate posterior of each mean
``mu(a, s)`` in the reward model's statistics (``nslb_cli.bandit.rewards``), updated by its
compiled twins (``nslb_cli.bandit.reward_kernels``) in ``step``,
in a pool shared by the particles (``pool``).

Acting draws ``M(a) = sum_m w_m mu^{i_m}(a)``: when the posteriors are normal
(``RewardModel.normal_sums``) from its exact law ``N(sum_m w_m m_m, sum_m w_m^2 v_m)``, one
normal per arm; otherwise every particle's ``mu^{i_m}(a)`` is drawn (none for a known mean).
Statistics are pool arrays ``(R, P, …)``; ``mean`` and ``var`` give them per particle and state.
"""

from __future__ import annotations

import numpy as np
from numba.typed import List

from nslb_cli.agents.umts.pool import SlotPool, gather_weights
from nslb_cli.agents.umts.step import PooledPosterior
from nslb_cli.bandit import reward_kernels as rk
from nslb_cli.bandit.problem import OfflineModel
from nslb_cli.bandit.rewards import RewardModel
from nslb_cli.bandit.rng import BatchRNG
from nslb_cli.compiled.jit import jit


@jit
def _normal_mixture(
    generators: List,
    mean: np.ndarray,
    var: np.ndarray,
    slot: np.ndarray,
    particles: np.ndarray,
    states: np.ndarray,
    weights: np.ndarray,
) -> np.ndarray:
    """``sum_m w_m mu^{i_m}(a)`` drawn from its normal law, ``N(sum_m w_m m_m, sum_m w_m^2
    v_m)`` per arm, for statistics that are normal means and variances: ``K`` normals per
    run."""
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


@jit
def _drawn_mixture(
    generators: List,
    family: int,
    first: np.ndarray,
    second: np.ndarray,
    slot: np.ndarray,
    particles: np.ndarray,
    states: np.ndarray,
    weights: np.ndarray,
) -> np.ndarray:
    """``sum_m w_m mu^{i_m}(a)`` with every ``mu^{i_m}(a)`` drawn: ``M · K`` draws per run,
    particle by particle and arm by arm (none where the weight is 0)."""
    R, _, K = first.shape
    draws = np.zeros((R, K))
    for r in range(R):
        generator = generators[r]
        for m in range(particles.shape[1]):
            w = weights[r, m]
            if w == 0.0:
                continue
            p = slot[r, particles[r, m], states[r, m]]
            for a in range(K):
                draws[r, a] += w * rk.draw(family, generator, first[r, p, a], second[r, p, a])
    return draws


class ArmPosterior(PooledPosterior):
    """Independent conjugate posteriors of ``mu(a, s)`` per particle (multi-armed), in the
    reward model's statistics, in a pool shared between particles
    (``nslb_cli.agents.umts.pool``)."""

    def __init__(self, model: OfflineModel, n_particles: int, reward_model: RewardModel) -> None:
        R, S, K = model.means.shape
        self.reward_model = reward_model
        self.pool = SlotPool(R, n_particles, S)
        self.pool_first = np.empty((R, n_particles * S, K))
        self.pool_second = np.empty((R, n_particles * S, K))
        self.pool_first[:, :S], self.pool_second[:, :S] = reward_model.prior(
            model.means, model.mean_sd
        )
        self.stats = (self.pool_first, self.pool_second)
        self.model = reward_model.kernel

    def sample_mixture(
        self,
        rng: BatchRNG,
        particles: np.ndarray,
        states: np.ndarray,
        weights: np.ndarray,
        contexts: np.ndarray | None,
    ) -> np.ndarray:
        """A draw of ``sum_m w_m mu^{i_m}(a)`` with ``i_m = particles[r, m]`` in state
        ``states[r, m]`` and ``w_m = weights[r, m]``: ``(R, K)``."""
        first, second, slot = self.pool_first, self.pool_second, self.pool.slot
        if self.reward_model.normal_sums:
            return _normal_mixture(rng.typed(), first, second, slot, particles, states, weights)
        family = self.reward_model.kernel[0]
        return _drawn_mixture(rng.typed(), family, first, second, slot, particles, states, weights)
