"""SW-mUCB in the JAX engine (Algorithm 4, docs/design.md §4.3) for one seed: over the
last ``tau`` rounds' believed states ``B_l`` and residuals ``mu(A_l, B_l) - R_l``,
``C_t = {s : G_t(s) <= sigma sqrt(6 N_t(s) log n)}`` and ``(B_t, A_t) = argmax_{s in C_t,
a} mu(a, s)`` (ties: lowest ``s``, then ``a``); all states when ``C_t`` is empty (counted in
``fallbacks``).

``tau`` is traced (a sweep over it is one program): the window's rounds sit in a ring as
wide as the largest window of the sweep, and ``G_t(s)`` and ``N_t(s)`` are kept as rounds
enter and leave, so a lane's numbers do not depend on the ring's width. A state no round of
the window believed has ``G_t(s) = 0`` exactly (its running sum is reset), as in the sum
over the window that the default engine takes."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import jax.numpy as jnp

from nslb_cli.agents.mucb import SWMUCBParams
from nslb_cli.jax_engine.contract import Decision, Model, Setting, Truth
from nslb_cli.jax_engine.numerics import written_after

Array = Any


class Window(NamedTuple):
    """The ring (round ``l`` in slot ``l mod tau``; ``-1``: empty) of ``B_l`` (as floats) and
    residuals, the window's sums ``G`` and counts ``N`` per state ``(S,)``, this round's
    ``B_t``, the fallbacks so far and the point estimate ``mu`` ``(S, K)``."""

    believed: Array
    residuals: Array
    gaps: Array
    counts: Array
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
    noise_traced = True  # reads setting.problem.sigma in its pure functions only
    traced = ("tau",)
    width: int = field(init=False)  # the ring's: the window built with (a sweep's largest)

    def __post_init__(self) -> None:
        object.__setattr__(self, "width", int(self.params.tau))

    def init(self, model: Model, key: Array) -> Window:
        S = self.setting.problem.n_states
        return Window(jnp.full(self.width, -1.0), jnp.zeros(self.width),
                      jnp.zeros(S), jnp.zeros(S, jnp.int64), jnp.zeros((), jnp.int64),
                      jnp.zeros((), jnp.int64), model.means)  # fmt: skip

    def act(self, w: Window, t: Array, key: Array, truth: Truth | None) -> tuple[Window, Decision]:
        problem = self.setting.problem
        radius = problem.sigma * math.sqrt(6.0 * math.log(problem.horizon))
        consistent = w.gaps <= radius * jnp.sqrt(w.counts.astype(jnp.float64))
        empty = ~consistent.any()
        consistent = consistent | empty
        scores = jnp.where(consistent[:, None], w.means, -jnp.inf)
        best = jnp.argmax(scores.ravel())  # row-major: lowest state, then arm, on ties
        state, action = best // problem.n_arms, best % problem.n_arms
        uniform = consistent / consistent.sum()
        w = w._replace(state=state, fallbacks=w.fallbacks + empty)
        return w, Decision(action, state, uniform)

    def update(self, w: Window, t: Array, action: Array, reward: Array, key: Array) -> Window:
        """Slot ``t mod tau`` gives up round ``t - tau`` (its state's ``G`` and ``N`` lose
        it) and takes ``B_t`` and ``mu(A_t, B_t) - R_t``."""
        slot = t % self.params.tau
        leaving, left = w.believed[slot].astype(jnp.int64), w.residuals[slot]
        residual = w.means[w.state, action] - reward
        full = leaving >= 0
        counts = w.counts.at[jnp.maximum(leaving, 0)].add(-full.astype(jnp.int64))
        gaps = w.gaps.at[jnp.maximum(leaving, 0)].add(jnp.where(full, -left, 0.0))
        counts = counts.at[w.state].add(1)
        gaps = jnp.where(counts > 0, gaps.at[w.state].add(residual), 0.0)
        read = (w.believed[slot], left)  # the ring written in place
        return w._replace(
            believed=w.believed.at[slot].set(written_after(w.state, *read)),
            residuals=w.residuals.at[slot].set(written_after(residual, *read)),
            gaps=gaps,
            counts=counts,
        )

    def summary(self, w: Window) -> dict[str, Array]:
        return {"fallbacks": w.fallbacks}
