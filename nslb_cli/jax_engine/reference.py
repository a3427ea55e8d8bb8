"""The reference agents in the JAX engine (docs/design.md §4.7): the oracle, which pulls
``argmax_a mu(a, S_t)`` knowing the truth, and uniform random play."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp

from nslb_cli.agents.reference import OracleParams, RandomParams
from nslb_cli.jax_engine.contract import Decision, Model, Setting, Truth
from nslb_cli.jax_engine.numerics import uniform

Array = Any


@dataclass(frozen=True)
class Oracle:
    """The oracle: the true state's best arm; belief the true state, one-hot posterior."""

    params: OracleParams
    setting: Setting
    Params = OracleParams
    sees_truth = True
    reports_belief = True
    noise_traced = True  # reads setting.problem.sigma in its pure functions only

    def init(self, model: Model, key: Array) -> tuple[()]:
        return ()

    def act(self, state: Any, t: Array, key: Array, truth: Truth | None) -> tuple[Any, Decision]:
        assert truth is not None  # sees_truth: the scan passes it
        one_hot = jax.nn.one_hot(truth.state, self.setting.problem.n_states, dtype=jnp.float64)
        return state, Decision(jnp.argmax(truth.means), truth.state, one_hot)

    def update(self, state: Any, t: Array, action: Array, reward: Array, key: Array) -> Any:
        return state

    def summary(self, state: Any) -> dict[str, Array]:
        return {}


@dataclass(frozen=True)
class Random(Oracle):
    """Uniform random play, ``A_t = floor(u K)``; no belief."""

    params: RandomParams  # type: ignore[assignment]
    Params = RandomParams  # type: ignore[assignment]
    sees_truth = False
    reports_belief = False
    noise_traced = True  # reads setting.problem.sigma in its pure functions only

    def act(self, state: Any, t: Array, key: Array, truth: Truth | None) -> tuple[Any, Decision]:
        K, S = self.setting.problem.n_arms, self.setting.problem.n_states
        action = jnp.floor(uniform(key) * K).astype(jnp.int64)
        return state, Decision(action, jnp.array(-1, jnp.int64), jnp.zeros(S))
