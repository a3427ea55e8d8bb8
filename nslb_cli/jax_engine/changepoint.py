"""CD-UCB and CD-TS in the JAX engine (docs/design.md §4.5) for one seed: per-arm UCB1 or
Thompson sampling since the last restart ``r``, forced exploration of period
``floor(K / gamma)``, and the mean-shift detector on the pulled arm's last ``tau`` rewards:
a global restart when ``|sum of the newer half - sum of the older half| > b``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from nslb_cli.agents.changepoint import CDTSParams, CDUCBParams, RestartedParams
from nslb_cli.agents.detectors import cao_threshold
from nslb_cli.agents.tuning import MIN_EXPLORATION
from nslb_cli.jax_engine.contract import Decision, Model, Setting, Truth
from nslb_cli.jax_engine.numerics import beta

Array = Any


class Restarted(NamedTuple):
    """Since the restart ``restart``: pulls and reward sums per arm ``(K,)``, each arm's
    ring buffer of rewards ``(K, tau)`` and count ``(K,)``; the detections; the
    forced-exploration period (0: none)."""

    pulls: Array
    sums: Array
    ring: Array
    counts: Array
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

    def init(self, model: Model, key: Array) -> Restarted:
        K, tau = self.setting.problem.n_arms, self.params.tau
        return Restarted(jnp.zeros(K), jnp.zeros(K), jnp.zeros((K, tau)),
                         jnp.zeros(K, jnp.int64), jnp.zeros((), jnp.int64),
                         jnp.zeros((), jnp.int64), self._period(model))  # fmt: skip

    def _period(self, model: Model) -> Array:
        """``floor(K / gamma)`` (0 for ``gamma = 0``); ``gamma = null``: Cao et al.'s
        ``sqrt(K L log n / n)``, ``L = 1 + (1 - min_s phi(s, s)) n``, capped at 1."""
        problem = self.setting.problem
        K, n = problem.n_arms, problem.horizon
        if self.params.gamma is None:
            segments = 1.0 + (1.0 - jnp.diagonal(model.transitions).min()) * n
            gamma = jnp.minimum(1.0, jnp.sqrt(K * segments * np.log(n) / n))
        else:
            gamma = jnp.asarray(max(self.params.gamma, 0.0))
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
        """The pulled arm's statistics and window; a global restart when its full window's
        halves differ by more than the threshold."""
        tau = self.params.tau
        count = s.counts[action]
        ring = s.ring.at[action, count % tau].set(reward)
        count = count + 1
        oldest = count % tau  # the slot of the oldest reward once the window is full
        ordered = jnp.roll(ring[action], -oldest)
        shift = ordered[tau // 2 :].sum() - ordered[: tau // 2].sum()
        fired = (count >= tau) & (jnp.abs(shift) > self._threshold())
        pulls = s.pulls.at[action].add(1.0)
        sums = s.sums.at[action].add(reward)
        counts = s.counts.at[action].set(count)
        keep = lambda a: jnp.where(fired, jnp.zeros_like(a), a)  # noqa: E731
        return s._replace(
            pulls=keep(pulls), sums=keep(sums), ring=ring, counts=keep(counts),
            restart=jnp.where(fired, t + 1, s.restart), detections=s.detections + fired,
        )  # fmt: skip

    def _threshold(self) -> float:
        """``b``: the configured one, else ``sigma sqrt(tau log(2 K n^2) / 2)``."""
        if self.params.threshold is not None:
            return float(self.params.threshold)
        return float(cao_threshold(self.setting.problem, self.params.tau))

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
