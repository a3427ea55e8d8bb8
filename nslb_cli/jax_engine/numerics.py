"""The JAX engine's shared arithmetic: draws from explicit keys, likelihoods, posteriors.

Every function works on one seed; nslb vectorises over seeds (``.scan``).
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp

from nslb_cli.bandit.rewards import SMALLEST_PROBABILITY

Array = Any
BOOST = 2.0  # gamma: shapes below it are drawn from a shape one larger
FEW = 16  # gamma: the rounds after the first propose for at most one entry in FEW
TRIES = 3  # gamma: proposals at once for each entry the first round leaves


def written_after(value: Array, *read: Array) -> Array:
    """``value``, the same number, made to depend on the ``read`` entries (finite floats) of
    the buffer it is written into, so that XLA updates the buffer in place, not a copy."""
    return value + 0.0 * sum(read)


def categorical(probabilities: Array, u: Array) -> Array:
    """Inverse-CDF draw along the last axis with the uniform ``u``: the first index whose
    cumulative mass exceeds ``u`` times the total (the last one if none does), as
    ``nslb_cli.bandit.rng.categorical``."""
    cdf = jnp.cumsum(probabilities, axis=-1)
    above = cdf > (u * cdf[..., -1])[..., None]
    above = above.at[..., -1].set(True)
    return jnp.argmax(above, axis=-1)


def weighted_sum(weights: Array, rows: Array) -> Array:
    """``sum_i weights[i] rows[i]`` along the first axis, as an elementwise product and a sum:
    a matrix product's order of sums would depend on the batch (docs/design.md §2)."""
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
    arrays: a proposal ``v = (1 + x / sqrt(9 d))^3``, ``d = a - 1/3``, ``x ~ N(0, 1)``, is
    accepted when ``log u < x^2 / 2 + d - d v + d log v``, and each entry keeps its first
    accepted proposal. Shapes below ``BOOST`` are boosted, ``G(alpha) = G(alpha + 1)
    u^(1 / alpha)``. A first round proposes for every entry; the few it leaves are gathered
    into slots (one entry in ``FEW`` at most, at least 16), and later rounds propose
    ``TRIES`` times for the slots alone. The draws depend on the key and ``alpha`` alone."""
    shape, alpha = alpha.shape, alpha.ravel()
    boost = alpha < BOOST
    a = jnp.where(boost, alpha + 1.0, alpha)
    n = a.shape[0]
    room = min(n, max(16, n // FEW))
    boost_key, full_key, few_key = jax.random.split(key, 3)

    def full(carry: tuple[Array, Array, Array]) -> tuple[Array, Array, Array]:
        """A proposal for every entry; an entry keeps its first accepted one."""
        i, done, value = carry
        accept, proposed = _propose(jax.random.fold_in(full_key, i), a)
        return i + 1, done | accept, jnp.where(accept & ~done, proposed, value)

    start = full((jnp.zeros((), jnp.int32), jnp.zeros(n, bool), jnp.zeros(n)))
    _, done, value = jax.lax.while_loop(lambda c: jnp.sum(~c[1]) > room, full, start)
    # the entries left, in order, into slots 0, 1, …: slot j holds the (j + 1)-th one left
    # (a scatter, not a search: no loop, which a GPU would run step by step); n: no entry
    left = jnp.cumsum(~done)
    slot = jnp.where(done, room, left - 1)  # room: none (dropped)
    at = jnp.full(room, n, jnp.int64).at[slot].set(jnp.arange(n), mode="drop")
    used = jnp.arange(room) < left[-1]
    tries = jnp.repeat(jnp.where(used, a[jnp.minimum(at, n - 1)], 2.0), TRIES)  # 2: unused

    def few(carry: tuple[Array, Array, Array]) -> tuple[Array, Array, Array]:
        """``TRIES`` proposals for every slot; a slot keeps its first accepted one."""
        i, done, value = carry
        accept, proposed = _propose(jax.random.fold_in(few_key, i), tries)
        accept, proposed = accept.reshape(room, TRIES), proposed.reshape(room, TRIES)
        first = jnp.take_along_axis(proposed, jnp.argmax(accept, axis=1)[:, None], 1)[:, 0]
        got = accept.any(axis=1)
        return i + 1, done | got, jnp.where(got & ~done, first, value)

    # the first round of the slots outside the loop, which then rarely runs
    slots = few((jnp.zeros((), jnp.int32), ~used, jnp.zeros(room)))
    slot_value = jax.lax.while_loop(lambda c: ~jnp.all(c[1]), few, slots)[2]
    value = value.at[at].set(slot_value, mode="drop")  # back to the entries (n: dropped)
    scale = jnp.exp(jnp.log(uniform(boost_key, (n,))) / jnp.where(boost, alpha, 1.0))
    return jnp.where(boost, value * scale, value).reshape(shape)


def _propose(key: Array, a: Array) -> tuple[Array, Array]:
    """A proposal of ``gamma`` for every entry of shapes ``a`` (``a >= 1``): whether
    it is accepted, and its value."""
    k_normal, k_uniform = jax.random.split(key)
    d = a - 1.0 / 3.0
    x = jax.random.normal(k_normal, a.shape, dtype=jnp.float64)
    u = uniform(k_uniform, a.shape)
    v = (1.0 + x / jnp.sqrt(9.0 * d)) ** 3
    positive = v > 0
    log_v = jnp.log(jnp.where(positive, v, 1.0))
    return positive & (jnp.log(u) < 0.5 * x**2 + d - d * v + d * log_v), d * v


def dirichlet(key: Array, alpha: Array) -> Array:
    """Rows ``~ Dir(alpha)`` along the last axis, as normalised ``gamma`` draws."""
    g = gamma(key, alpha)
    return g / g.sum(axis=-1, keepdims=True)


def beta(key: Array, a: Array, b: Array) -> Array:
    """``Beta(a, b)`` draws as ``G_a / (G_a + G_b)`` (``gamma``)."""
    g = gamma(key, jnp.stack([a, b]))
    return g[0] / (g[0] + g[1])
