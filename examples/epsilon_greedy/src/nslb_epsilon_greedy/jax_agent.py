"""The same epsilon-greedy agent for nslb's JAX engine (``run.engine=jax``): pure functions
of one seed, which nslb vectorises over seeds and compiles with the world (the contract:
``nslb_cli.api``, "JAX agents")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from nslb_cli.api import Decision, JaxModel, JaxSetting, JaxTruth
from nslb_epsilon_greedy.agent import EpsilonGreedyParams


class Counts(NamedTuple):
    pulls: Any  # (K,) since the last restart
    sums: Any  # (K,)
    explorations: Any  # ()


@dataclass(frozen=True)
class EpsilonGreedyJax:
    params: EpsilonGreedyParams
    setting: JaxSetting
    Params = EpsilonGreedyParams
    sees_truth = False
    reports_belief = False

    def init(self, model: JaxModel, key: Any) -> Counts:
        K = self.setting.problem.n_arms
        return Counts(jnp.zeros(K), jnp.zeros(K), jnp.zeros((), jnp.int64))

    def act(self, c: Counts, t: Any, key: Any, truth: JaxTruth | None) -> tuple[Counts, Decision]:
        K, S = self.setting.problem.n_arms, self.setting.problem.n_states
        explore_key, arm_key = jax.random.split(key)
        explore = jax.random.uniform(explore_key) < self.params.epsilon
        means = jnp.where(c.pulls > 0, c.sums / jnp.maximum(c.pulls, 1.0), jnp.inf)
        arm = jnp.where(explore, jax.random.randint(arm_key, (), 0, K), jnp.argmax(means))
        no_belief = Decision(arm, jnp.array(-1, jnp.int64), jnp.zeros(S))
        return c._replace(explorations=c.explorations + explore), no_belief

    def update(self, c: Counts, t: Any, action: Any, reward: Any, key: Any) -> Counts:
        pulls, sums = c.pulls.at[action].add(1.0), c.sums.at[action].add(reward)
        every = self.params.restart_every
        restart = (every > 0) & ((t + 1) % max(every, 1) == 0)
        return c._replace(pulls=jnp.where(restart, 0.0, pulls), sums=jnp.where(restart, 0.0, sums))

    def summary(self, c: Counts) -> dict[str, Any]:
        return {"explorations": c.explorations}
