"""The worlds of the JAX engine: ``env=synthetic`` and ``env=piecewise`` for one seed, drawn
from keys folded from the seed, stream by stream as the default engine draws them
(docs/design.md §2-3: the same laws, not the same numbers).

A world is drawn once per seed (``draw``; a prior model's Dirichlet rows and Beta means
from ``jax.random``); the latent path and the rewards round by round inside the scan
(``state``, ``reward``), each round's numbers from its stream folded with ``t``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from nslb_cli.bandit.problem import Problem
from nslb_cli.bandit.rewards import Bernoulli, Gaussian
from nslb_cli.bandit.rng import Stream
from nslb_cli.bandit.world import World
from nslb_cli.envs.piecewise import PiecewiseParams
from nslb_cli.envs.synthetic import SyntheticParams
from nslb_cli.jax_engine.contract import Model
from nslb_cli.jax_engine.numerics import categorical, uniform

Array = Any


class SeedWorld(NamedTuple):
    """One seed's world: true means ``(S, K)``, true transitions ``(S, S)``, the offline
    model, ``S_1``, its path (the key of its uniforms, or the path itself where it is the
    same for every seed) and the key of its noise."""

    true_means: Array
    true_transitions: Array
    model: Model
    first_state: Array
    path: Array
    noise_key: Array


def stream(key: Array, which: Stream) -> Array:
    """The seed's key for one purpose (``Stream``'s codes, as the default engine's)."""
    return jax.random.fold_in(key, int(which))


def realise(reward: str, sigma: float, world: SeedWorld, mean: Array, t: Array) -> Array:
    """``R_t``: ``mu + sigma eps_t`` (``gaussian``) or a click ``1[u_t < mu]``, from the
    round's noise key."""
    key = jax.random.fold_in(world.noise_key, t)
    if reward == "gaussian":
        return mean + sigma * jax.random.normal(key, dtype=jnp.float64)
    return (uniform(key) < mean).astype(jnp.float64)


@dataclass(frozen=True)
class SyntheticWorld:
    """``env=synthetic`` (docs/design.md §3.1): uniform prior means; a known model, or true
    means drawn from the reward model's conjugate prior and true rows ``phi_s ~ Dir(alpha_s)``;
    ``fixed`` or ``markov`` dynamics. ``traced``: parameters that are arrays inside the
    program (``.sweep``); ``noise`` the one an agent reads too (``.scan.with_noise``)."""

    params: SyntheticParams
    traced = ("period", "switch_prob", "stay_concentration", "move_concentration", "prior_sd",
              "prior_strength", "sigma")  # fmt: skip
    noise = ("sigma",)
    problem: Problem = field(init=False)  # of one run, with the sigma it was built with

    def __post_init__(self) -> None:
        p = self.params
        reward = Gaussian(p.sigma) if p.reward == "gaussian" else Bernoulli()
        problem = Problem(p.n_arms, p.n_states, p.horizon, reward.scale, 1, reward)
        object.__setattr__(self, "problem", problem)

    @classmethod
    def of(cls, params: SyntheticParams) -> SyntheticWorld:
        return cls(params)

    def noise_scale(self) -> Array | None:
        """The reward noise's ``sigma`` as the params hold it (a traced array in the
        program), or ``None`` for clicks, whose scale does not depend on the params."""
        return self.params.sigma if self.params.reward == "gaussian" else None

    @property
    def learns_transitions(self) -> bool:
        return self.params.model == "prior"

    learns_means = learns_transitions

    def draw(self, key: Array) -> SeedWorld:
        """The seed's true parameters and offline model (module docstring)."""
        p = self.params
        S, K = p.n_states, p.n_arms
        k_means, k_truth, k_rows = jax.random.split(stream(key, Stream.PARAMETERS), 3)
        prior_means = uniform(k_means, (S, K))
        switch = 1.0 / p.period if p.dynamics == "fixed" else p.switch_prob
        move = switch / (S - 1)  # envs.synthetic.uniform_switching, of traced rates
        given = jnp.full((S, S), move) + jnp.eye(S) * (1.0 - switch - move)
        initial = jnp.full(S, 1.0 / S)
        if p.model == "known":
            truth, true_phi = prior_means, given
            model = Model(prior_means, jnp.zeros((S, K)), given, jnp.ones((S, S)), initial)
        else:
            stay, move = p.stay_concentration, p.move_concentration
            alpha = jnp.where(jnp.eye(S, dtype=bool), stay, move).astype(jnp.float64)
            truth, sd = self._true_means(k_truth, prior_means)
            true_phi = jax.random.dirichlet(k_rows, alpha, dtype=jnp.float64)  # once a seed
            point = alpha / alpha.sum(axis=1, keepdims=True)
            model = Model(prior_means, sd, point, alpha, initial)
        k_first, k_path = jax.random.split(stream(key, Stream.PATH))
        first = jnp.floor(uniform(k_first) * S).astype(jnp.int64)
        return SeedWorld(truth, true_phi, model, first, k_path, stream(key, Stream.NOISE))

    def _true_means(self, key: Array, prior_means: Array) -> tuple[Array, Array]:
        """True means around the prior means and their prior standard deviation."""
        p = self.params
        if p.reward == "gaussian":
            noise = jax.random.normal(key, prior_means.shape, dtype=jnp.float64)
            return prior_means + p.prior_sd * noise, jnp.full(prior_means.shape, p.prior_sd)
        c = p.prior_strength
        truth = jax.random.beta(key, c * prior_means, c * (1.0 - prior_means), dtype=jnp.float64)
        return truth, jnp.sqrt(prior_means * (1.0 - prior_means) / (c + 1.0))

    def state(self, world: SeedWorld, previous: Array, t: Array) -> Array:
        """``S_t``: ``S_1`` in round 0; then a jump every ``period`` rounds to one of the
        other states (``fixed``) or ``S_t ~ phi*(S_{t-1}, ·)`` (``markov``), by the round's
        path uniform."""
        S = self.params.n_states
        u = uniform(jax.random.fold_in(world.path, t))
        if self.params.dynamics == "fixed":
            jump = (previous + 1 + jnp.floor(u * (S - 1)).astype(jnp.int64)) % S
            moved = jnp.where(t % self.params.period == 0, jump, previous)
        else:
            moved = categorical(world.true_transitions[previous], u)
        return jnp.where(t == 0, world.first_state, moved)

    def reward(self, world: SeedWorld, mean: Array, t: Array) -> Array:
        """``R_t`` (``realise``)."""
        return realise(self.params.reward, self.params.sigma, world, mean, t)


@dataclass(frozen=True)
class PiecewiseWorld:
    """``env=piecewise`` (docs/design.md §3.3): the table's rows are the states and the
    path is the segments'; the same for every seed, whose only randomness is the noise. The
    offline model is the default engine's (the truth, ``Υ / n`` as the switch rate), read
    from its world of one seed (``table``)."""

    params: PiecewiseParams
    table: World = field(repr=False, compare=False)

    @classmethod
    def of(cls, params: PiecewiseParams) -> PiecewiseWorld:
        from nslb_cli.envs.piecewise import Piecewise

        return cls(params, Piecewise.build(params, np.array([0])))

    @property
    def problem(self) -> Problem:
        return dataclasses.replace(self.table.problem, n_runs=1)

    learns_transitions = False
    learns_means = False

    def draw(self, key: Array) -> SeedWorld:
        model = self.table.offline_model
        states = self.table.states[0]
        problem = self.table.problem
        rows = np.zeros((problem.n_states, problem.n_arms))
        rows[states] = self.table.mean_rewards[0]
        phi = jnp.asarray(model.transitions[0])
        given = Model(jnp.asarray(model.means[0]), jnp.asarray(model.mean_sd[0]), phi,
                      jnp.ones_like(phi), jnp.asarray(model.initial[0]))  # fmt: skip
        path = jnp.asarray(states)
        return SeedWorld(jnp.asarray(rows), phi, given, path[0], path, stream(key, Stream.NOISE))

    def state(self, world: SeedWorld, previous: Array, t: Array) -> Array:
        """The row of round ``t``'s segment (``path`` is the whole path here)."""
        return world.path[t]

    def reward(self, world: SeedWorld, mean: Array, t: Array) -> Array:
        """``R_t`` (``realise``)."""
        return realise(self.params.reward, self.params.sigma, world, mean, t)


WORLDS: dict[str, Any] = {"synthetic": SyntheticWorld, "piecewise": PiecewiseWorld}
"""The JAX engine's world of environment params, by ``env.name``."""
