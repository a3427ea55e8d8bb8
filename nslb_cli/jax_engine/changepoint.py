"""CD-UCB and CD-TS in the JAX engine (docs/design.md §4.5) for one seed: per-arm UCB1 or
Thompson sampling since the last restart ``r``, forced exploration of period
``floor(K / gamma)``, and the mean-shift detector on the pulled arm's last ``tau`` rewards:
a global restart when ``|sum of the newer half - sum of the older half| > b``.

``tau``, ``threshold`` and ``gamma`` are traced (a sweep over them is one program): each
arm's rewards since the restart sit in a ring as wide as the largest window of the sweep,
and the two halves' sums are kept as rewards enter, move to the older half and leave, so
a lane's numbers do not depend on the ring's width."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from nslb_cli.agents.changepoint import CDTSParams, CDUCBParams, RestartedParams
from nslb_cli.agents.tuning import MIN_EXPLORATION
from nslb_cli.jax_engine.contract import Decision, Model, Setting, Truth
from nslb_cli.jax_engine.numerics import beta, written_after

Array = Any


class Restarted(NamedTuple):
    """Since the restart ``restart``: pulls and reward sums per arm ``(K,)``, each arm's
    ring of rewards ``(K, width)`` (its ``c``-th since the restart in slot ``c mod width``),
    count ``(K,)`` and the sums of its window's newer and older halves ``(K,)``; the
    detections; the forced-exploration period (0: none)."""

    pulls: Array
    sums: Array
    ring: Array
    counts: Array
    newer: Array
    older: Array
    restart: Array
    detections: Array
    period: Array


@dataclass(frozen=True)
class CDUCB:
    """CD-UCB: ``A_t = argmax_a Y_a / n_a + sigma sqrt(8 log m / n_a)``, ``m = t - r + 1``,
    unpulled arms first."""

    params: RestartedParams
    setting: Setting
    Params = CDUCBParams
    sees_truth = False
    reports_belief = False
    noise_traced = True  # reads setting.problem.sigma in its pure functions only
    traced = ("tau", "threshold", "gamma")
    width: int = field(init=False)  # the ring's: the window built with (a sweep's largest)

    def __post_init__(self) -> None:
        object.__setattr__(self, "width", int(self.params.tau))

    def init(self, model: Model, key: Array) -> Restarted:
        K = self.setting.problem.n_arms
        return Restarted(jnp.zeros(K), jnp.zeros(K), jnp.zeros((K, self.width)),
                         jnp.zeros(K, jnp.int64), jnp.zeros(K), jnp.zeros(K),
                         jnp.zeros((), jnp.int64), jnp.zeros((), jnp.int64),
                         self._period(model))  # fmt: skip

    def _period(self, model: Model) -> Array:
        """``floor(K / gamma)`` (0 for ``gamma = 0``); ``gamma = null``: Cao et al.'s
        ``sqrt(K L log n / n)``, ``L = 1 + (1 - min_s phi(s, s)) n``, capped at 1."""
        problem = self.setting.problem
        K, n = problem.n_arms, problem.horizon
        if self.params.gamma is None:
            segments = 1.0 + (1.0 - jnp.diagonal(model.transitions).min()) * n
            gamma = jnp.minimum(1.0, jnp.sqrt(K * segments * np.log(n) / n))
        else:
            gamma = jnp.maximum(jnp.asarray(self.params.gamma, jnp.float64), 0.0)
        safe = jnp.maximum(gamma, MIN_EXPLORATION)
        return jnp.where(gamma > 0, jnp.floor(K / safe), 0).astype(jnp.int64)

    def base_arm(self, s: Restarted, t: Array, key: Array) -> Array:
        m = (t - s.restart + 1).astype(jnp.float64)
        sigma = self.setting.problem.sigma
        index = s.sums / jnp.maximum(s.pulls, 1.0) + sigma * jnp.sqrt(
            8.0 * jnp.log(m) / jnp.maximum(s.pulls, 1.0)
        )
        return jnp.argmax(jnp.where(s.pulls == 0, jnp.inf, index))

    def act(
        self, s: Restarted, t: Array, key: Array, truth: Truth | None
    ) -> tuple[Restarted, Decision]:
        K, S = self.setting.problem.n_arms, self.setting.problem.n_states
        phase = (t - s.restart) % jnp.maximum(s.period, 1)
        forced = (s.period > 0) & (phase < K)
        action = jnp.where(forced, phase, self.base_arm(s, t, key))
        return s, Decision(action, jnp.array(-1, jnp.int64), jnp.zeros(S))

    def update(self, s: Restarted, t: Array, action: Array, reward: Array, key: Array) -> Restarted:
        """The pulled arm's statistics and window: ``R_t`` enters the newer half, the reward
        ``tau - tau // 2`` pulls older moves to the older half and the one ``tau`` pulls
        older leaves; a global restart when a full window's halves differ by more than the
        threshold."""
        tau, width = self.params.tau, self.width
        newer_size = tau - tau // 2
        count = s.counts[action]  # the arm's pulls since the restart, before this one
        row = s.ring[action]  # read before R_t takes its slot (the leaving one's if full)
        moved = jnp.where(count >= newer_size, row[(count - newer_size) % width], 0.0)
        left = jnp.where(count >= tau, row[(count - tau) % width], 0.0)
        newer = s.newer.at[action].add(reward - moved)
        older = s.older.at[action].add(moved - left)
        written = written_after(reward, moved, left)  # the ring, as wide as the widest
        # window of a sweep, in place
        count = count + 1
        fired = (count >= tau) & (jnp.abs(newer[action] - older[action]) > self._threshold())
        keep = lambda a: jnp.where(fired, jnp.zeros_like(a), a)  # noqa: E731
        return s._replace(
            pulls=keep(s.pulls.at[action].add(1.0)), sums=keep(s.sums.at[action].add(reward)),
            ring=s.ring.at[action, (count - 1) % width].set(written),
            counts=keep(s.counts.at[action].set(count)), newer=keep(newer), older=keep(older),
            restart=jnp.where(fired, t + 1, s.restart), detections=s.detections + fired,
        )  # fmt: skip

    def _threshold(self) -> Array:
        """``b``: the configured one, else ``sigma sqrt(tau log(2 K n^2) / 2)`` (as
        ``cao_threshold`` computes it)."""
        if self.params.threshold is not None:
            return self.params.threshold
        problem = self.setting.problem
        log_term = float(np.log(2 * problem.n_arms * problem.horizon**2))
        return problem.sigma * jnp.sqrt(self.params.tau * log_term / 2)

    def summary(self, s: Restarted) -> dict[str, Array]:
        return {"detections": s.detections}

    def detection_count(self, s: Restarted) -> Array:
        return s.detections


@dataclass(frozen=True)
class CDTS(CDUCB):
    """CD-TS: ``theta_a ~ N(Y_a / (n_a + 1), sigma^2 / (n_a + 1))`` or ``Beta(1 + Y_a,
    1 + n_a - Y_a)``, ``A_t = argmax_a theta_a``."""

    Params = CDTSParams  # type: ignore[assignment]

    def base_arm(self, s: Restarted, t: Array, key: Array) -> Array:
        if self.setting.gaussian:
            scale = 1.0 / (s.pulls + 1.0)
            z = jax.random.normal(key, s.pulls.shape, dtype=jnp.float64)
            theta = s.sums * scale + self.setting.problem.sigma * jnp.sqrt(scale) * z
        else:
            theta = beta(key, 1.0 + s.sums, 1.0 + s.pulls - s.sums)
        return jnp.argmax(theta)
