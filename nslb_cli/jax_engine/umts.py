"""umTS in the JAX engine: the particle filter of Algorithm 3 for one seed (docs/design.md
§4.2, whose steps this follows; ``nslb_cli.agents.umts.agent`` is the default engine's).

Particle ``i`` holds its last state ``B_{t-1}^i``, its Dirichlet counts ``(S, S)`` and the
conjugate posterior of every state's arm means: Gaussian ``(m, v)`` or Beta ``(a, b)``
(infinite where a mean is known). Acting draws ``B_t^i`` from the posterior-predictive row
and plays ``argmax_a sum_i w_i mu^i(a)`` (``mean``; with Gaussian posteriors the sum is drawn
from its exact law ``N(sum w m, sum w^2 v)``) or one particle's ``argmax_a mu^j(a)``
(``sample``). Updating after ``(A_t, R_t)``: ``phi_{B_{t-1}} ~ Dir(counts)`` (``P_1`` in
round 0, the given row when transitions are known), ``q(s) = phi_s p(R_t | s)``,
``log w += log sum_s q``, ``B_t ~ q``, counts and statistics updated, and a resampling when
``ESS = 1 / sum w^2 < resample_threshold N``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from nslb_cli.agents.umts.agent import UMTSParams
from nslb_cli.jax_engine.contract import Decision, Model, Setting, Truth
from nslb_cli.jax_engine.numerics import (
    beta,
    beta_from_sd,
    categorical,
    dirichlet,
    predictive_log_likelihood,
    uniform,
    weighted_sum,
)

Array = Any


class Particles(NamedTuple):
    """One seed's particles and what they need: ``last`` ``(N,)``, ``counts`` ``(N, S, S)``,
    the statistics ``first``/``second`` ``(N, S, K)`` (``m, v`` or ``a, b``), ``log_weight``
    ``(N,)``, the number of resamplings, and the offline model."""

    last: Array
    counts: Array
    first: Array
    second: Array
    log_weight: Array
    resamples: Array
    model: Model


@dataclass(frozen=True)
class UMTS:
    """umTS (module docstring)."""

    params: UMTSParams
    setting: Setting
    Params = UMTSParams
    sees_truth = False
    reports_belief = True
    noise_traced = True  # reads setting.problem.sigma in its pure functions only
    traced = ("resample_threshold",)

    def init(self, model: Model, key: Array) -> Particles:
        N = self.params.num_particles
        tile = lambda a: jnp.broadcast_to(a, (N, *a.shape))  # noqa: E731
        if self.setting.gaussian:
            first, second = model.means, model.mean_sd**2
        else:
            first, second = beta_from_sd(model.means, model.mean_sd)
        counts = (
            tile(model.concentration) if self.setting.learns_transitions else jnp.zeros((N, 1, 1))
        )
        return Particles(jnp.zeros(N, jnp.int64), counts, tile(first), tile(second),
                         jnp.zeros(N), jnp.zeros((), jnp.int64), model)  # fmt: skip

    def _predictive_rows(self, p: Particles, t: Array) -> Array:
        """``P(B_t^i = · | B_{t-1}^i)`` ``(N, S)``: ``P_1`` in round 0, the Dirichlet mean or
        the given row after."""
        if self.setting.learns_transitions:
            rows = p.counts[jnp.arange(p.last.shape[0]), p.last]
            rows = rows / rows.sum(axis=1, keepdims=True)
        else:
            rows = p.model.transitions[p.last]
        return jnp.where(t == 0, p.model.initial[None, :], rows)

    def _means(self, p: Particles, particle: Array, state: Array, key: Array) -> Array:
        """A draw of ``mu(·, state)`` ``(..., K)`` from the posteriors of ``particle``."""
        first, second = p.first[particle, state], p.second[particle, state]
        if not self.setting.learns_means:
            return p.model.means[state]
        if self.setting.gaussian:
            return first + jnp.sqrt(second) * jax.random.normal(key, first.shape, jnp.float64)
        known = jnp.isinf(first)
        draw = beta(key, jnp.where(known, 1.0, first), jnp.where(known, 1.0, second))
        return jnp.where(known, p.model.means[state], draw)

    def act(
        self, p: Particles, t: Array, key: Array, truth: Truth | None
    ) -> tuple[Particles, Decision]:
        N = self.params.num_particles
        rows = self._predictive_rows(p, t)
        w = jax.nn.softmax(p.log_weight)
        posterior = weighted_sum(w, rows)
        k_state, k_means, k_pick = jax.random.split(key, 3)
        if self.params.action_selection == "sample":
            j = categorical(w, uniform(k_pick))
            state = categorical(rows[j], uniform(k_state))
            action = jnp.argmax(self._means(p, j, state, k_means))
            return p, Decision(action, state, posterior)
        states = categorical(rows, uniform(k_state, (N,)))
        particles = jnp.arange(N)
        if self.setting.gaussian and self.setting.learns_means:
            m, v = p.first[particles, states], p.second[particles, states]  # (N, K)
            sd = jnp.sqrt(weighted_sum(w**2, v))
            mixed = weighted_sum(w, m) + sd * jax.random.normal(k_means, sd.shape, jnp.float64)
        else:
            mixed = weighted_sum(w, self._means(p, particles, states, k_means))
        return p, Decision(jnp.argmax(mixed), jnp.argmax(posterior), posterior)

    def update(self, p: Particles, t: Array, action: Array, reward: Array, key: Array) -> Particles:
        N = self.params.num_particles
        k_rows, k_states, k_resample = jax.random.split(key, 3)
        particles = jnp.arange(N)
        if self.setting.learns_transitions:
            drawn = dirichlet(k_rows, p.counts[particles, p.last])
        else:
            drawn = p.model.transitions[p.last]
        rows = jnp.where(t == 0, p.model.initial[None, :], drawn)
        first, second = p.first[:, :, action], p.second[:, :, action]  # (N, S)
        mean = (
            first
            if self.setting.gaussian
            else jnp.where(
                jnp.isinf(first), p.model.means[None, :, action], first / (first + second)
            )
        )
        sigma = self.setting.problem.sigma
        log_q = jnp.log(rows) + predictive_log_likelihood(
            self.setting.gaussian, sigma, reward, mean, second
        )
        total = jax.scipy.special.logsumexp(log_q, axis=1)
        new = categorical(jnp.exp(log_q - total[:, None]), uniform(k_states, (N,)))
        counts = p.counts
        if self.setting.learns_transitions:
            counts = counts.at[particles, p.last, new].add(jnp.where(t == 0, 0.0, 1.0))
        p = p._replace(last=new, counts=counts, log_weight=p.log_weight + total)
        if self.setting.learns_means:
            f, s = self._posterior(first[particles, new], second[particles, new], reward)
            p = p._replace(first=p.first.at[particles, new, action].set(f),
                           second=p.second.at[particles, new, action].set(s))  # fmt: skip
        return self._resample(p, k_resample)

    def _posterior(self, first: Array, second: Array, reward: Array) -> tuple[Array, Array]:
        """The conjugate update of one mean's posterior with ``reward`` (a known mean stays)."""
        if self.setting.gaussian:
            noise = self.setting.problem.sigma**2
            known = second <= 0
            var = jnp.where(known, 0.0, 1.0 / (1.0 / jnp.where(known, 1.0, second) + 1.0 / noise))
            mean = jnp.where(
                known, first, var * (first / jnp.where(known, 1.0, second) + reward / noise)
            )
            return mean, var
        return first + reward, second + (1.0 - reward)

    def _resample(self, p: Particles, key: Array) -> Particles:
        """Resample when ``ESS < resample_threshold N`` (``systematic``, ``stratified`` or
        ``multinomial`` positions, each selecting the first particle whose cumulative
        weight exceeds it); the weights are then uniform."""
        N = self.params.num_particles
        w = jax.nn.softmax(p.log_weight)
        due = 1.0 / jnp.sum(w**2) < self.params.resample_threshold * N
        scheme = self.params.resampling
        if scheme == "multinomial":
            positions = jnp.sort(uniform(key, (N,)))
        else:
            u = uniform(key, (N,) if scheme == "stratified" else ())
            positions = (jnp.arange(N) + u) / N
        ancestors = jnp.minimum(jnp.searchsorted(jnp.cumsum(w), positions, side="right"), N - 1)
        pick = lambda a: jnp.where(due, a[ancestors], a)  # noqa: E731
        return p._replace(
            last=pick(p.last),
            counts=pick(p.counts) if self.setting.learns_transitions else p.counts,
            first=pick(p.first),
            second=pick(p.second),
            log_weight=jnp.where(due, 0.0, p.log_weight),
            resamples=p.resamples + due,
        )

    def summary(self, p: Particles) -> dict[str, Array]:
        return {"resamples": p.resamples}
