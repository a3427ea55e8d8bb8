"""Exp4.S in the JAX engine (docs/design.md §4.4) for one seed: exponential weights with
fixed share over the latent states as experts, expert ``s`` recommending
``xi_s = argmax_a mu(a, s)``:

    p(a) = (1 - gamma) sum_s w_s 1{xi_s = a} + gamma / K,    A_t ~ p
    w_s <- w_s exp(gamma y_s / K) + e alpha / S, normalised,  y_s = 1{xi_s = A_t} x_t / p(A_t)

with ``x_t`` the reward mapped to ``[0, 1]`` by ``[min mu - 2 sigma, max mu + 2 sigma]`` cut
to the reward model's support, and Auer et al.'s tuning when ``gamma``/``alpha`` are null."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from nslb_cli.agents.exp import RANGE_SIGMAS, Exp4SParams
from nslb_cli.jax_engine.contract import Decision, Model, Setting, Truth
from nslb_cli.jax_engine.numerics import categorical, uniform

Array = Any


class Weights(NamedTuple):
    """Expert weights ``(S,)``, the advice ``(S,)``, ``gamma``, ``alpha`` and the reward
    range ``(low, high)``."""

    weights: Array
    advice: Array
    gamma: Array
    alpha: Array
    low: Array
    high: Array


@dataclass(frozen=True)
class Exp4S:
    """Exp4.S (module docstring); belief the heaviest expert, posterior the weights."""

    params: Exp4SParams
    setting: Setting
    Params = Exp4SParams
    sees_truth = False
    reports_belief = True
    noise_traced = True  # reads setting.problem.sigma in its pure functions only
    traced = ("gamma", "alpha", "reward_low", "reward_high")

    def init(self, model: Model, key: Array) -> Weights:
        problem, p = self.setting.problem, self.params
        S, K, n = problem.n_states, problem.n_arms, problem.horizon
        switches = (1.0 - jnp.diagonal(model.transitions).min()) * n
        tuned = jnp.minimum(
            1.0, jnp.sqrt(K * (switches * np.log(S * n) + np.e) / ((np.e - 1.0) * n))
        )
        gamma = tuned if p.gamma is None else jnp.asarray(p.gamma, jnp.float64)
        alpha = jnp.asarray(1.0 / n if p.alpha is None else p.alpha, jnp.float64)
        margin = RANGE_SIGMAS * problem.sigma
        floor, ceiling = problem.reward_model.support
        low = (
            jnp.maximum(model.means.min() - margin, floor)
            if p.reward_low is None
            else jnp.asarray(p.reward_low)
        )
        high = (
            jnp.minimum(model.means.max() + margin, ceiling)
            if p.reward_high is None
            else jnp.asarray(p.reward_high)
        )
        return Weights(jnp.full(S, 1.0 / S), jnp.argmax(model.means, axis=1), gamma, alpha,
                       jnp.asarray(low, jnp.float64), jnp.asarray(high, jnp.float64))  # fmt: skip

    def _probabilities(self, w: Weights) -> Array:
        K = self.setting.problem.n_arms
        mixture = jax.ops.segment_sum(w.weights, w.advice, num_segments=K)
        return (1.0 - w.gamma) * mixture + w.gamma / K

    def act(
        self, w: Weights, t: Array, key: Array, truth: Truth | None
    ) -> tuple[Weights, Decision]:
        action = categorical(self._probabilities(w), uniform(key))
        return w, Decision(action, jnp.argmax(w.weights), w.weights)

    def update(self, w: Weights, t: Array, action: Array, reward: Array, key: Array) -> Weights:
        K, S = self.setting.problem.n_arms, self.setting.problem.n_states
        x = jnp.clip((reward - w.low) / (w.high - w.low), 0.0, 1.0)
        gain = x / self._probabilities(w)[action]
        boost = jnp.where(w.advice == action, jnp.exp(w.gamma / K * gain), 1.0)
        weights = w.weights * boost + np.e * w.alpha / S
        return w._replace(weights=weights / weights.sum())

    def summary(self, w: Weights) -> dict[str, Array]:
        return {"gamma": w.gamma, "alpha": w.alpha}
