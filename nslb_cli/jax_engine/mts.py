"""mTS in the JAX engine (Algorithm 1, docs/design.md §4.1) for one seed: the exact HMM
filter ``P_{t+1}(s') ∝ sum_s P_t(s) p(R_t | mu(A_t, s)) phi(s, s')`` on the offline model's
point estimate, and Thompson sampling of the latent state, ``B_t ~ P_t``,
``A_t = argmax_a mu(a, B_t)``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import jax.numpy as jnp

from nslb_cli.agents.mts import MTSParams
from nslb_cli.jax_engine.contract import Decision, Model, Setting, Truth
from nslb_cli.jax_engine.numerics import categorical, log_likelihood, uniform, weighted_sum

Array = Any


class Filter(NamedTuple):
    """``P_t`` ``(S,)`` and the point estimate it filters with."""

    predictive: Array
    model: Model


@dataclass(frozen=True)
class MTS:
    """mTS (module docstring); belief ``B_t``, posterior ``P_t``."""

    params: MTSParams
    setting: Setting
    Params = MTSParams
    sees_truth = False
    reports_belief = True
    noise_traced = True  # reads setting.problem.sigma in its pure functions only

    def init(self, model: Model, key: Array) -> Filter:
        return Filter(model.initial, model)

    def act(self, f: Filter, t: Array, key: Array, truth: Truth | None) -> tuple[Filter, Decision]:
        state = categorical(f.predictive, uniform(key))
        return f, Decision(jnp.argmax(f.model.means[state]), state, f.predictive)

    def update(self, f: Filter, t: Array, action: Array, reward: Array, key: Array) -> Filter:
        """Equation (1), the likelihoods shifted by their maximum in log space."""
        problem = self.setting.problem
        ll = log_likelihood(self.setting.gaussian, problem.sigma, reward, f.model.means[:, action])
        filtered = f.predictive * jnp.exp(ll - ll.max())
        filtered = filtered / filtered.sum()
        return f._replace(predictive=weighted_sum(filtered, f.model.transitions))

    def summary(self, f: Filter) -> dict[str, Array]:
        return {}
