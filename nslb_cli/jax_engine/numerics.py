"""The JAX engine's shared arithmetic: draws from explicit keys, likelihoods, posteriors.

Every function works on one seed; nslb vectorises over seeds (:mod:`.scan`).
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp

from nslb_cli.bandit.rewards import SMALLEST_PROBABILITY

Array = Any


def categorical(probabilities: Array, u: Array) -> Array:
    """Inverse-CDF draw along the last axis with the uniform ``u``: the first index whose
    cumulative mass exceeds ``u`` times the total (the last one if none does), as
    :func:`nslb_cli.bandit.rng.categorical`."""
    cdf = jnp.cumsum(probabilities, axis=-1)
    above = cdf > (u * cdf[..., -1])[..., None]
    above = above.at[..., -1].set(True)
    return jnp.argmax(above, axis=-1)


def weighted_sum(weights: Array, rows: Array) -> Array:
    """``sum_i weights[i] rows[i]`` along the first axis, as an elementwise product and a
    sum rather than a matrix product: XLA picks a product's kernel, and with it the order
    of its sums, by the batch's size, which would make a seed's last bits depend on its
    batch (docs/design.md §2)."""
    return (weights.reshape(weights.shape + (1,) * (rows.ndim - 1)) * rows).sum(axis=0)


def log_likelihood(gaussian: bool, sigma: float, reward: Array, means: Array) -> Array:
    """``log p(r | mu)`` up to a constant: ``-(r - mu)^2 / (2 sigma^2)``, or for a click
    ``log mu`` (``log(1 - mu)`` for a miss) floored at ``SMALLEST_PROBABILITY``."""
    if gaussian:
        return -0.5 * (reward - means) ** 2 / sigma**2
    probability = reward * means + (1.0 - reward) * (1.0 - means)
    return jnp.log(jnp.maximum(probability, SMALLEST_PROBABILITY))


def predictive_log_likelihood(
    gaussian: bool, sigma: float, reward: Array, mean: Array, spread: Array
) -> Array:
    """``log p(r | posterior)`` of a reward given the posterior of its mean: Gaussian
    ``N(r; m, v + sigma^2)`` with ``spread = v``; Bernoulli ``m`` for a click and ``1 - m``
    for a miss (``spread`` unused: the Beta's mean is ``m``)."""
    if gaussian:
        var = spread + sigma**2
        return -0.5 * (jnp.log(2.0 * math.pi * var) + (reward - mean) ** 2 / var)
    return log_likelihood(False, sigma, reward, mean)


def beta_from_sd(mean: Array, sd: Array) -> tuple[Array, Array]:
    """The Beta ``(a, b)`` with this mean and standard deviation: ``a = n m``,
    ``b = n (1 - m)``, ``n = m (1 - m) / sd^2 - 1``; infinite where ``sd = 0`` (known)."""
    strength = jnp.where(sd > 0, mean * (1.0 - mean) / jnp.maximum(sd, 1e-300) ** 2 - 1.0, jnp.inf)
    return strength * mean, strength * (1.0 - mean)


def uniform(key: Array, shape: tuple[int, ...] = ()) -> Array:
    """Uniforms in ``[0, 1)`` in the engine's float type."""
    return jax.random.uniform(key, shape, dtype=jnp.float64)


def gamma(key: Array, alpha: Array) -> Array:
    """``Gamma(alpha, 1)`` draws, exactly, by Marsaglia & Tsang (2000)'s method on whole
    arrays: each round of the loop proposes for every entry from ``fold_in(key, round)``
    (``d = a - 1/3``, ``v = (1 + x / sqrt(9 d))^3``, ``x ~ N(0, 1)``, accepted when
    ``log u < x^2 / 2 + d - d v + d log v``) and an entry keeps its first accepted
    proposal; the loop ends when every entry has one (a few rounds: each is accepted with
    probability at least 0.95). ``alpha < 1`` is boosted: ``G(alpha) = G(alpha + 1)
    u^(1 / alpha)``. An entry's draw depends on its key and position only, so a seed's
    numbers do not depend on its batch (the loop's extra rounds change no accepted entry).
    Several times faster than ``jax.random.gamma``, whose loop runs per entry."""
    boost = alpha < 1.0
    a = jnp.where(boost, alpha + 1.0, alpha)
    d = a - 1.0 / 3.0
    c = 1.0 / jnp.sqrt(9.0 * d)
    boost_key, loop_key = jax.random.split(key)

    def body(carry: tuple[Array, Array, Array]) -> tuple[Array, Array, Array]:
        i, done, value = carry
        k_normal, k_uniform = jax.random.split(jax.random.fold_in(loop_key, i))
        x = jax.random.normal(k_normal, alpha.shape, dtype=jnp.float64)
        u = uniform(k_uniform, alpha.shape)
        v = (1.0 + c * x) ** 3
        positive = v > 0
        log_v = jnp.log(jnp.where(positive, v, 1.0))
        accept = positive & (jnp.log(u) < 0.5 * x**2 + d - d * v + d * log_v)
        value = jnp.where(accept & ~done, d * v, value)
        return i + 1, done | accept, value

    start = (jnp.zeros((), jnp.int32), jnp.zeros(alpha.shape, bool), jnp.zeros(alpha.shape))
    _, _, value = jax.lax.while_loop(lambda c: ~jnp.all(c[1]), body, start)
    scale = uniform(boost_key, alpha.shape) ** (1.0 / jnp.where(boost, alpha, 1.0))
    return jnp.where(boost, value * scale, value)


def dirichlet(key: Array, alpha: Array) -> Array:
    """Rows ``~ Dir(alpha)`` along the last axis, as normalised :func:`gamma` draws."""
    g = gamma(key, alpha)
    return g / g.sum(axis=-1, keepdims=True)


def beta(key: Array, a: Array, b: Array) -> Array:
    """``Beta(a, b)`` draws as ``G_a / (G_a + G_b)`` (:func:`gamma`)."""
    g = gamma(key, jnp.stack([a, b]))
    return g[0] / (g[0] + g[1])
