"""SW-mUCB in the JAX engine (Algorithm 4, docs/design.md §4.3) for one seed: over the
last ``tau`` rounds' believed states ``B_l`` and residuals ``mu(A_l, B_l) - R_l``,
``C_t = {s : G_t(s) <= sigma sqrt(6 N_t(s) log n)}`` and ``(B_t, A_t) = argmax_{s in C_t,
a} mu(a, s)`` (ties: lowest ``s``, then ``a``); all states when ``C_t`` is empty (counted in
``fallbacks``)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from nslb_cli.agents.mucb import SWMUCBParams
from nslb_cli.jax_engine.contract import Decision, Model, Setting, Truth
from nslb_cli.jax_engine.numerics import weighted_sum

Array = Any


class Window(NamedTuple):
    """The ring buffer (round ``l`` in slot ``l mod tau``; ``-1``: empty), this round's
    ``B_t``, the fallbacks so far and the point estimate ``mu`` ``(S, K)``."""

    believed: Array
    residuals: Array
    state: Array
    fallbacks: Array
    means: Array


@dataclass(frozen=True)
class SWMUCB:
    """SW-mUCB (module docstring); belief ``B_t``, "posterior" uniform on ``C_t``."""

    params: SWMUCBParams
    setting: Setting
    Params = SWMUCBParams
    sees_truth = False
    reports_belief = True

    def init(self, model: Model, key: Array) -> Window:
        tau = self.params.tau
        return Window(jnp.full(tau, -1, jnp.int64), jnp.zeros(tau), jnp.zeros((), jnp.int64),
                      jnp.zeros((), jnp.int64), model.means)  # fmt: skip

    def act(self, w: Window, t: Array, key: Array, truth: Truth | None) -> tuple[Window, Decision]:
        problem = self.setting.problem
        member = jax.nn.one_hot(w.believed, problem.n_states, dtype=jnp.float64)  # (tau, S)
        sums, counts = weighted_sum(w.residuals, member), member.sum(axis=0)
        radius = problem.sigma * math.sqrt(6.0 * math.log(problem.horizon))
        consistent = sums <= radius * jnp.sqrt(counts)
        empty = ~consistent.any()
        consistent = consistent | empty
        scores = jnp.where(consistent[:, None], w.means, -jnp.inf)
        best = jnp.argmax(scores.ravel())  # row-major: lowest state, then arm, on ties
        state, action = best // problem.n_arms, best % problem.n_arms
        uniform = consistent / consistent.sum()
        w = w._replace(state=state, fallbacks=w.fallbacks + empty)
        return w, Decision(action, state, uniform)

    def update(self, w: Window, t: Array, action: Array, reward: Array, key: Array) -> Window:
        """Slot ``t mod tau`` takes ``B_t`` and ``mu(A_t, B_t) - R_t``."""
        slot = t % self.params.tau
        return w._replace(
            believed=w.believed.at[slot].set(w.state),
            residuals=w.residuals.at[slot].set(w.means[w.state, action] - reward),
        )

    def summary(self, w: Window) -> dict[str, Array]:
        return {"fallbacks": w.fallbacks}
