"""The latent autoregressive bandit of Trella, Dempsey, Doshi-Velez & Murphy (RLC 2025),
"Non-Stationary Latent Auto-Regressive Bandits" (docs/design.md §3.4).

A continuous latent ``z_t`` follows an AR(k) process, and every arm's mean moves with it:

    z_t = gamma_1 z_{t-1} + … + gamma_k z_{t-k} + eta_t,   eta_t ~ N(0, sigma_z^2)   (t >= k)
    R_t = mu_a + beta_a z_t + eps_t,                       eps_t ~ N(0, sigma_r^2)

The first ``k`` values ``z_0 … z_{k-1}`` are drawn independently from ``N(0, initial_sd^2)``
and hold in the first ``k`` rounds (the authors' code: ``10 · randn(k)`` per seed). The
coefficients are given (``coefficients``, refused unless stationary: every root of
``x^k - gamma_1 x^{k-1} - … - gamma_k`` inside the unit circle) or drawn per seed from the
parameters stream: partial autocorrelations uniform in ``(-1, 1)``, mapped to coefficients
by the Durbin–Levinson recursion, a bijection onto the stationary region (Jones 1987), so
every draw is stationary on paper; ``check_path`` refuses a seed that is not in floating
point, or whose path leaves a sane range.

The world has one nominal state (the ``state`` column is 0); the offline model is the true AR
model (``OfflineModel.ar_*``). Agents that act on a discrete latent model are refused here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from nslb_cli.bandit.problem import OfflineModel, Problem
from nslb_cli.bandit.rewards import Gaussian
from nslb_cli.bandit.rng import Stream, generator
from nslb_cli.bandit.world import World
from nslb_cli.common import validators as check
from nslb_cli.common.errors import ConfigError
from nslb_cli.envs.synthetic import MIN_SIGMA

SANE = 1e6  # the latent's largest magnitude, in units of its scales (check_path)


@dataclass
class LatentARParams(check.Section):
    """Parameters of ``env=latent_ar``; defaults: the paper's setting with ``k = 1`` and
    coefficients drawn per seed (the paper's own coefficients: ``env=latent_ar/paper_k1``,
    ``paper_k5``, ``paper_k10``)."""

    scales = ("sigma_r", "sigma_z", "initial_sd")

    name: str = "latent_ar"
    order: int = 1
    coefficients: list[float] | None = None
    sigma_z: float = 1.0
    sigma_r: float = 1.0
    mu: list[float] = field(default_factory=lambda: [0.0, 0.0])
    beta: list[float] = field(default_factory=lambda: [-1.0, 1.0])
    initial_sd: float = 10.0
    horizon: int = 200
    n_arms: int | None = None
    n_states: int | None = None

    def validate(self) -> None:
        check.positive(self.order, "order")
        check.positive(self.horizon, "horizon")
        check.require(
            self.order < self.horizon,
            "order",
            f"must be below env.horizon ({self.horizon}): the first env.order rounds hold the "
            "initial values, so no round would follow the AR process",
        )
        for key in ("sigma_z", "initial_sd"):
            check.non_negative(getattr(self, key), key)
        check.at_least(self.sigma_r, MIN_SIGMA, "sigma_r", "smaller noise underflows likelihoods")
        mu, beta = _vector(self.mu, "mu"), _vector(self.beta, "beta")
        check.require(len(mu) >= 2, "mu", f"one mean per arm, at least 2, got {len(mu)}")
        check.require(len(beta) == len(mu), "beta", f"one per arm ({len(mu)}), got {len(beta)}")
        if self.coefficients is not None:
            gamma = _vector(self.coefficients, "coefficients")
            check.require(
                len(gamma) == self.order,
                "coefficients",
                f"one per lag (env.order = {self.order}), got {len(gamma)}",
            )
            largest = largest_root(gamma)
            check.require(
                largest < 1.0,
                "coefficients",
                f"must be stationary (every root of x^k - gamma_1 x^(k-1) - … - gamma_k inside "
                f"the unit circle); the largest has modulus {largest:.4g}",
            )
        for key, derived in (("n_arms", len(mu)), ("n_states", 1)):
            given = getattr(self, key)
            check.require(
                given is None or given == derived,
                key,
                f"is {derived} here, got {given} (leave it out: it is derived)",
            )
            setattr(self, key, derived)


def _vector(values: list[float], key: str) -> np.ndarray:
    """``values`` as a 1-D array of numbers."""
    try:
        array = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        array = np.empty((0, 0))
    check.require(array.ndim == 1, key, f"must be a list of numbers, got {values}")
    return array


def largest_root(coefficients: np.ndarray) -> Any:
    """The largest modulus of the roots of ``x^k - gamma_1 x^(k-1) - … - gamma_k``, the
    eigenvalues of its companion matrix, for the last axis of ``coefficients`` (``(k,)``: a
    number; ``(R, k)``: one per row): the process is stationary when it is below 1."""
    gamma = np.asarray(coefficients, dtype=float)
    k = gamma.shape[-1]
    companion = np.zeros((*gamma.shape, k))
    companion[..., 0, :] = gamma
    companion[..., np.arange(1, k), np.arange(k - 1)] = 1.0
    return np.abs(np.linalg.eigvals(companion)).max(axis=-1)


def from_partial_autocorrelations(partial: np.ndarray) -> np.ndarray:
    """AR coefficients ``gamma_1 … gamma_k`` with these partial autocorrelations
    (Durbin–Levinson): ``phi_mm = pi_m``, ``phi_mj = phi_{m-1,j} - pi_m phi_{m-1,m-j}``.
    Every ``pi`` in ``(-1, 1)`` gives a stationary process."""
    phi = np.zeros(0)
    for p in partial:
        phi = np.concatenate([phi - p * phi[::-1], [p]])
    return phi


def coefficients(p: LatentARParams, seed: int) -> np.ndarray:
    """Seed ``seed``'s ``gamma_1 … gamma_k``: given, or drawn from its parameters stream."""
    if p.coefficients is not None:
        return np.asarray(p.coefficients, dtype=float)
    partial = generator(seed, Stream.PARAMETERS).uniform(-1.0, 1.0, p.order)
    return from_partial_autocorrelations(partial)


def latent_path(p: LatentARParams, seeds: np.ndarray, gamma: np.ndarray) -> np.ndarray:
    """``z_0 … z_{n-1}`` for every seed, ``(R, n)``; one normal per seed and round."""
    k, n = p.order, p.horizon
    normals = np.stack([generator(int(s), Stream.PATH).standard_normal(n) for s in seeds])
    z = np.empty_like(normals)
    z[:, :k] = p.initial_sd * normals[:, :k]
    for t in range(k, n):
        total = p.sigma_z * normals[:, t]
        for i in range(k):  # a fixed order per run: the same numbers in any batch
            total = total + gamma[:, i] * z[:, t - 1 - i]
        z[:, t] = total
    return z


def check_path(p: LatentARParams, seeds: np.ndarray, gamma: np.ndarray, z: np.ndarray) -> None:
    """Refuse, in one line, a seed whose drawn coefficients are not stationary in floating
    point or whose latent path leaves ``|z| <= SANE · max(sigma_z, initial_sd)``: a drawn
    AR(k) of high order is stationary on paper, yet its variance grows like
    ``prod_m 1/(1 - pi_m^2)`` and its path can reach 10^13 (order 60) or overflow."""
    if p.coefficients is None:
        largest = largest_root(gamma)  # every seed's
        if (largest >= 1.0).any():
            run = int(np.argmax(largest >= 1.0))
            raise ConfigError(
                "env.order",
                f"seed {seeds[run]}'s drawn AR({p.order}) coefficients are not stationary in "
                f"floating point (largest root {largest[run]:.17g}): lower env.order or give "
                "env.coefficients",
            )
    bound = SANE * max(p.sigma_z, p.initial_sd)
    far = np.abs(z).max(axis=1)
    if not (far <= bound).all():
        run, given = int(np.argmax(~(far <= bound))), p.coefficients is not None
        fix = "choose roots farther from 1" if given else "lower env.order or give env.coefficients"
        raise ConfigError(
            "env.coefficients" if given else "env.order",
            f"seed {seeds[run]}'s latent path reaches |z| = {far[run]:.3g}, beyond "
            f"{SANE:.0e} x max(sigma_z, initial_sd): its AR({p.order}) coefficients are "
            f"stationary only on paper; {fix}",
        )


class LatentAR:
    """Latent AR bandit (Trella et al., 2025): an AR(k) latent moves every arm's mean."""

    Params = LatentARParams
    contextual = False
    latent = "autoregressive"

    @staticmethod
    def build(p: LatentARParams, seeds: np.ndarray) -> World:
        """A world for ``seeds``; seed ``k``'s realisation depends only on ``p`` and ``k``."""
        seeds = np.asarray(seeds, dtype=np.int64)
        R, n = len(seeds), p.horizon
        mu, beta = np.asarray(p.mu, dtype=float), np.asarray(p.beta, dtype=float)
        K = len(mu)
        gamma = np.stack([coefficients(p, int(s)) for s in seeds])  # (R, k)
        z = latent_path(p, seeds, gamma)
        check_path(p, seeds, gamma, z)
        reward = Gaussian(p.sigma_r)
        noise = np.stack([reward.noise(generator(int(s), Stream.NOISE), n) for s in seeds])
        mean_rewards = mu + beta * z[:, :, None]  # (R, n, K)
        offline = OfflineModel(
            means=np.broadcast_to(mu, (R, 1, K)).copy(),
            mean_sd=np.zeros((R, 1, K)),
            transitions=np.ones((R, 1, 1)),
            concentration=None,
            initial=np.ones((R, 1)),
            ar_coefficients=gamma,
            ar_loadings=np.broadcast_to(beta, (R, K)).copy(),
            ar_noise_sd=np.full(R, float(p.sigma_z)),
            ar_initial_sd=np.full(R, float(p.initial_sd)),
        )
        problem = Problem(
            n_arms=K, n_states=1, horizon=n, sigma=reward.scale, n_runs=R, reward_model=reward
        )
        states = np.zeros((R, n), dtype=np.int64)
        return World(problem, seeds, states, mean_rewards, noise, offline)
