"""Switching latent bandits (Russo, Metelli & Restelli, TMLR 2024; docs/design.md §3.5).

``S`` latent states follow a Markov chain with transition matrix ``P``, unknown to the agent;
pulling arm ``a`` in state ``s`` shows one of ``N`` outcomes, ``o ~ O[s, a, ·]``, rewarded
``r[o]``; ``O`` and ``r`` are known. ``P`` and ``O`` are drawn as the authors' code draws
them (``draw_problem``) or read from a file (``read_problem``).

Agents are told (``model=known``) ``O`` (``OfflineModel.emissions``), the expected rewards as
known means, the true ``P`` as the point estimate and a flat Dirichlet prior
``prior_concentration · 1``; or (``model=learned``) what EM learned of ``P`` and ``O`` from
logs of the true model (``nslb_cli.envs.learned``): the posterior's ``O`` and the expected
rewards under it, its mean ``P`` and its Dirichlet concentrations.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from nslb_cli.bandit.problem import OfflineModel, Problem
from nslb_cli.bandit.rewards import Categorical
from nslb_cli.bandit.rng import Stream, categorical, generator
from nslb_cli.bandit.world import World
from nslb_cli.common import validators as check
from nslb_cli.common.errors import ConfigError
from nslb_cli.envs import learned

REWARDS = ("categorical", "bernoulli")
MODELS = ("known", "learned")  # what agents are told: the true P and O, or EM's fit of logs
#: The problem file's fields, nslb's name first, then the authors' (their bandit_info.json).
FIELDS = {
    "transitions": ("transitions", "transition_matrix"),
    "observations": ("observations", "state_action_reward_matrix"),
    "rewards": ("rewards", "possible_rewards"),
}
SIZES = ("n_states", "n_arms", "n_outcomes")  # env's sizes, in the observations' axes' order
TOLERANCE = 1e-6  # how far a row of probabilities may sum from 1
MAX_SIZE = 64  # states, arms or outcomes: SL-EC's matrix has (K N)^2 x S^2 entries


@dataclass
class SwitchingLatentParams(check.Section):
    """Parameters of ``env=switching_latent``; defaults: the paper's 3 x 4 x 5 problem."""

    added_later = ("model", "offline_rounds", "offline_sequence", "offline_restarts")

    name: str = "switching_latent"
    reward: str = "categorical"
    n_states: int | None = None
    n_arms: int | None = None
    n_outcomes: int | None = None
    horizon: int = 10000
    transition_multiplier: float = 20.0
    observation_multiplier: float = 20.0
    min_transition_prob: float | None = None
    prior_concentration: float = 1.0
    problem: str | None = None
    model: str = "known"
    offline_rounds: int = 10000
    offline_sequence: int = 100
    offline_restarts: int = 3

    def validate(self) -> None:
        check.one_of(self.reward, REWARDS, "reward")
        check.one_of(self.model, MODELS, "model")
        for key in ("offline_rounds", "offline_sequence", "offline_restarts"):
            check.positive(getattr(self, key), key)
        check.positive(self.horizon, "horizon")
        check.non_negative(self.transition_multiplier, "transition_multiplier")
        check.non_negative(self.observation_multiplier, "observation_multiplier")
        check.at_least(
            self.prior_concentration,
            0.01,
            "prior_concentration",
            "smaller concentrations underflow Gamma draws",
        )
        if self.reward == "bernoulli":
            check.require(
                self.n_outcomes in (2, None),
                "n_outcomes",
                "Bernoulli rewards have 2 outcomes (0 and 1)",
            )
        if self.problem is not None:
            self._sizes_from(Path(self.problem).expanduser())
        self.n_states = 3 if self.n_states is None else self.n_states
        self.n_arms = 4 if self.n_arms is None else self.n_arms
        if self.n_outcomes is None:
            self.n_outcomes = 2 if self.reward == "bernoulli" else 5
        for key in SIZES:
            value = getattr(self, key)
            check.require(
                isinstance(value, int) and 1 <= value <= MAX_SIZE,
                key,
                f"must be an integer from 1 to {MAX_SIZE}, got {value}",
            )
        check.require(self.n_outcomes >= 2, "n_outcomes", "needs at least 2 outcomes")
        if self.min_transition_prob is not None:
            bound = 1 / self.n_states
            check.require(
                0 < self.min_transition_prob < bound,
                "min_transition_prob",
                f"must lie in (0, 1/n_states) = (0, {bound:.4g})",
            )

    @property
    def sizes(self) -> tuple[int, int, int]:
        """``(S, K, N)`` as ``validate`` resolved them."""
        S, K, N = self.n_states, self.n_arms, self.n_outcomes
        assert S is not None and K is not None and N is not None
        return S, K, N

    def _sizes_from(self, path: Path) -> None:
        """The sizes of the problem file at ``path``; a size set otherwise is refused."""
        _, obs, r = read_problem(path)
        check.require(
            self.reward == "categorical" or tuple(r) == (0.0, 1.0),
            "reward",
            "bernoulli needs the file's rewards to be [0, 1]",
        )
        for key, size in zip(SIZES, obs.shape, strict=True):
            given = getattr(self, key)
            check.require(
                given in (None, size),
                key,
                f"{path} has {size}, not {given}: the problem file sets it, leave it out",
            )
            setattr(self, key, size)


def _field(data: dict[str, Any], key: str, path: Path) -> Any:
    """The value of the problem file's field ``key`` under its one name there."""
    names = [name for name in FIELDS[key] if name in data]
    if len(names) > 1:
        raise ConfigError("problem", f"{path}: {' and '.join(names)} are one field: keep one")
    if names:
        _numbers_only(data[names[0]], names[0], path)
        return data[names[0]]
    if key == "rewards":  # the authors' estimation problems have none
        return None
    raise ConfigError("problem", f"{path}: no field {' or '.join(FIELDS[key])}")


def _numbers_only(value: Any, name: str, path: Path) -> None:
    """Refuse a field whose values are not all JSON numbers (a string, a boolean, a null)."""
    if isinstance(value, list):
        for item in value:
            _numbers_only(item, name, path)
    elif isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError("problem", f"{path}: {name} holds {json.dumps(value)}; only numbers")


def _probabilities(value: Any, ndim: int, what: str, path: Path) -> np.ndarray:
    """``value`` as an array of ``ndim`` axes whose last axis holds probabilities."""
    try:
        array = np.array(value, dtype=float)
    except (TypeError, ValueError):
        raise ConfigError("problem", f"{path}: {what} must be nested lists of numbers") from None
    if array.ndim != ndim or min(array.shape, default=0) < 1:
        raise ConfigError("problem", f"{path}: {what} must have {ndim} axes, got {array.shape}")
    if not (np.isfinite(array).all() and (array >= 0).all() and (array <= 1).all()):
        raise ConfigError("problem", f"{path}: {what} must hold probabilities in [0, 1]")
    sums = array.sum(axis=-1)
    if np.abs(sums - 1).max() > TOLERANCE:
        worst = np.unravel_index(np.abs(sums - 1).argmax(), sums.shape)
        raise ConfigError(
            "problem",
            f"{path}: {what} row {list(map(int, worst))} sums to {sums[worst]:.9g}, not 1",
        )
    return array / sums[..., None]


def read_problem(path: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(P, O, r)`` from a JSON file (docs/design.md §3.5): ``transitions`` ``S x S``,
    ``observations`` ``S x K x N``, ``rewards`` ``N`` distinct numbers in ``[0, 1]``
    (``0, 1/(N-1), …, 1`` when absent); the authors' names ``transition_matrix``,
    ``state_action_reward_matrix``, ``possible_rewards`` are read too."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as err:
        raise ConfigError("problem", f"cannot read {path} as JSON: {err}") from None
    if not isinstance(data, dict):
        raise ConfigError("problem", f"{path}: expected a JSON object with fields")
    P = _probabilities(_field(data, "transitions", path), 2, "transitions", path)
    obs = _probabilities(_field(data, "observations", path), 3, "observations", path)
    S, K, N = obs.shape
    if P.shape != (S, S) or max(S, K, N) > MAX_SIZE:
        raise ConfigError(
            "problem",
            f"{path}: transitions must be {S} x {S} for {S} states "
            f"(observations {S} x {K} x {N}, at most {MAX_SIZE} each)",
        )
    given = _field(data, "rewards", path)
    try:
        r = np.linspace(0.0, 1.0, N) if given is None else np.array(given, dtype=float).ravel()
        Categorical(tuple(r.tolist()))
    except (TypeError, ValueError) as err:
        raise ConfigError("problem", f"{path}: rewards: {err}") from None
    if len(r) != N:
        raise ConfigError("problem", f"{path}: {len(r)} rewards for {N} outcomes")
    return P, obs, r


def draw_transitions(
    S: int, multiplier: float, low: float | None, rng: np.random.Generator
) -> np.ndarray:
    """``P ∝ M + (5/3) multiplier I`` with ``M`` uniform integers in ``1..15``, its entries
    below ``low`` raised (the authors' ``generate_transition_matrix_v2``)."""
    M = rng.integers(1, 16, (S, S)) + np.eye(S) * multiplier * 5.0 / 3.0
    P = M / M.sum(axis=1, keepdims=True)
    while low is not None and P.min() < low:
        P = np.where(low > P, P + low / 4, P)
        P /= P.sum(axis=1, keepdims=True)
    return P


def draw_problem(p: SwitchingLatentParams, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """``(P, O)`` drawn as the authors' code draws them (``generate_transition_matrix_v2``,
    ``generate_state_action_reward_dist``): ``P ∝ M + (5/3) m_P I`` with ``M`` uniform integers
    in ``1..15``, raised where below ``min_transition_prob``; ``O[s] ∝ U + m_O Π_s E`` with
    ``U`` uniform in ``[0, 1]``, ``E`` the blocks of identity matrices that pair arms with
    outcomes and ``Π_s`` a uniform permutation of the arms (``K >= N``) or outcomes."""
    S, K, N = p.sizes
    P = draw_transitions(S, p.transition_multiplier, p.min_transition_prob, rng)
    E = np.zeros((K, N))
    for i in range(max(K, N) // min(K, N)):
        if K >= N:
            E[i * N : (i + 1) * N] = np.eye(N)
        else:
            E[:, i * K : (i + 1) * K] = np.eye(K)
    obs = np.empty((S, K, N))
    for s in range(S):
        noise = rng.random((K, N))
        order = rng.permutation(K if K >= N else N)
        bumps = E[order] if K >= N else E[:, order]
        obs[s] = noise + p.observation_multiplier * bumps
        obs[s] /= obs[s].sum(axis=1, keepdims=True)
    return P, obs


def _path(P: np.ndarray, seeds: np.ndarray, n: int) -> np.ndarray:
    """``S_1..S_n`` per seed, ``(R, n)``: a uniform first state, then one uniform a round."""
    R, S = P.shape[:2]
    rngs = [generator(int(s), Stream.PATH) for s in seeds]
    first = np.array([g.integers(S) for g in rngs], dtype=np.int64)
    uniforms = np.stack([g.random(n) for g in rngs])
    states = np.empty((R, n), dtype=np.int64)
    states[:, 0] = first
    runs = np.arange(R)
    for t in range(1, n):
        states[:, t] = categorical(P[runs, states[:, t - 1]], uniforms[:, t])
    return states


class SwitchingLatent:
    """Switching latent bandit with categorical outcomes (Russo et al., 2024)."""

    Params = SwitchingLatentParams
    contextual = False
    outcome_laws = True  # agents are told O[s, a, ·] (OfflineModel.emissions): sl_ec runs here
    files = ("problem",)

    @staticmethod
    def true_model(p: SwitchingLatentParams) -> bool:
        """Agents are told the true ``P``, ``O`` and ``r`` (umTS's prior aside), unless the
        model is learned."""
        return p.model == "known"

    memory = staticmethod(learned.memory)  # model=learned: one seed's logs and fit at a time

    @staticmethod
    def build(p: SwitchingLatentParams, seeds: np.ndarray) -> World:
        """A world for ``seeds``; seed ``k``'s realisation depends only on ``p`` and ``k``."""
        seeds = np.asarray(seeds, dtype=np.int64)
        R, n = len(seeds), p.horizon
        if p.problem is not None:
            one = read_problem(Path(p.problem).expanduser())
            P, obs, r = (
                np.repeat(one[0][None], R, axis=0),
                np.repeat(one[1][None], R, axis=0),
                one[2],
            )
        else:
            drawn = [draw_problem(p, generator(int(s), Stream.PARAMETERS)) for s in seeds]
            P, obs = np.stack([d[0] for d in drawn]), np.stack([d[1] for d in drawn])
            r = np.linspace(0.0, 1.0, obs.shape[3])
        world = categorical_world(P, obs, r, seeds, n, p.prior_concentration)
        if p.model == "known":
            return world
        model, summary = learned.learned_models(
            seeds, P, obs, world.problem.reward_model, learned.Logging.of(p)
        )  # the fits' statistics go to seed=K.json
        return dataclasses.replace(world, offline_model=model, summary=summary)


def categorical_world(
    P: np.ndarray,
    obs: np.ndarray,
    r: np.ndarray,
    seeds: np.ndarray,
    n: int,
    prior_concentration: float,
) -> World:
    """The world of transitions ``P (R, S, S)``, observation model ``obs (R, S, K, N)`` and
    outcome rewards ``r (N,)`` for ``seeds`` over ``n`` rounds."""
    R, S, K = obs.shape[:3]
    reward = Categorical(tuple(r.tolist()))
    means = (obs * r).sum(axis=3)  # (R, S, K): the expected reward of each arm and state
    states = _path(P, seeds, n)
    noise = np.stack([reward.noise(generator(int(s), Stream.NOISE), n) for s in seeds])
    offline = OfflineModel(
        means=means,
        mean_sd=np.zeros((R, S, K)),
        transitions=P,
        concentration=np.full((R, S, S), prior_concentration),
        initial=np.full((R, S), 1.0 / S),
        emissions=obs,
    )
    problem = Problem(
        n_arms=K, n_states=S, horizon=n, sigma=reward.scale, n_runs=R, reward_model=reward
    )
    mean_rewards = np.take_along_axis(means, states[:, :, None], axis=1)
    return World(problem, seeds, states, mean_rewards, noise, offline, emissions=obs)
