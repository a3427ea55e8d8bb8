"""The MovieLens non-stationary latent contextual bandit of the paper's section 5.2
(docs/design.md §3.2).

A run (one seed) is a superuser switching among one test user ``i_s`` per cluster; reward of
movie ``j`` in state ``s``: ``U_{i_s} · V_j + eps_t``; contexts ``X_t[a] = V̂_j``. The offline
model's ``mean_sd`` has shape ``(R, S, 0)``: a linear model has no per-arm prior spread.

Transitions (``transitions``), for points ``p_1..p_S`` (user vectors or cluster means) and
``D(s, s') = ||p_s' - p_s||^2``:

* ``structured`` (default): stay with probability ``stay``; otherwise move to
  ``s' != s`` with probability ``(1 - stay) · [0.9 / (S - 1) + 0.1 · K(s, s')]``,
  ``K(s, ·) ∝ exp(-D(s, ·))`` over ``s' != s``. A change every ``1 / (1 - stay)`` rounds on
  average, similar states the likelier destinations.
* ``literal`` (the paper's printed formula): ``0.9 J + 0.1 K`` with ``J(s, s) = 1 - p``,
  ``J(s, s') = p / (S - 1)``, ``p = stay``, and ``K(s, ·) ∝ exp(+D(s, ·))`` over all states
  including ``s``.

Each seed's world comes from its own streams, computed without BLAS (docs/design.md §2).
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from nslb_cli.bandit.numerics import normalised_exp
from nslb_cli.bandit.problem import OfflineModel, Problem, Sizes
from nslb_cli.bandit.rng import Stream, generator
from nslb_cli.bandit.world import World
from nslb_cli.common import validators as check
from nslb_cli.data import releases
from nslb_cli.data.prepare import AUTO, Loaded, Prepared, Settings, load_or_prepare
from nslb_cli.envs.synthetic import MIN_CONCENTRATION, MIN_SIGMA

log = logging.getLogger("nslb")

TRANSITIONS = ("structured", "literal")
JUMP_WEIGHT, SIMILARITY_WEIGHT = 0.9, 0.1  # the paper's 0.9 J + 0.1 K
ALL_MOVIES = "(all movies)"  # the one group of a catalogue without genres
CHANGE_DRAWS = 100  # superuser draws (seeds 0..99) averaged in expected_changes


@dataclass
class MovieLensParams(check.Section):
    """Parameters of ``env=movielens``; defaults are the paper's (docs/design.md §3.2)."""

    scales = ("sigma",)

    name: str = "movielens"
    release: str = "ml-1m"
    data_dir: str | None = None
    cache_dir: str | None = None
    min_user_ratings: int = 200
    min_item_ratings: int = 200
    rank: int = 20
    als_reg: Any = AUTO  # a positive number, or "auto" (str | float: OmegaConf 2.3 has no unions)
    als_iterations: int = 30
    n_states: int = 5
    n_arms: int = 20
    horizon: int = 2000
    sigma: float = 0.5
    reward: str = "gaussian"
    stay: float = 0.9975
    transitions: str = "structured"
    prior_concentration: float = 800.0
    prior_ridge: float = 1e-3
    data_seed: int = 0

    def validate(self) -> None:
        releases.check_source(self.release, self.data_dir)
        check.positive(self.min_user_ratings, "min_user_ratings")
        check.positive(self.min_item_ratings, "min_item_ratings")
        check.positive(self.rank, "rank")
        if self.als_reg != AUTO:
            check.require(
                isinstance(self.als_reg, int | float) and not isinstance(self.als_reg, bool),
                "als_reg",
                f"must be '{AUTO}' or a number, got {self.als_reg!r}",
            )
            check.positive(self.als_reg, "als_reg")
        check.positive(self.als_iterations, "als_iterations")
        check.require(self.n_states >= 2, "n_states", f"must be >= 2, got {self.n_states}")
        check.require(self.n_arms >= 2, "n_arms", f"must be >= 2, got {self.n_arms}")
        check.positive(self.horizon, "horizon")
        check.at_least(self.sigma, MIN_SIGMA, "sigma", "smaller noise underflows likelihoods")
        check.require(
            self.reward == "gaussian",
            "reward",
            f"movielens rewards are ratings with Gaussian noise, not '{self.reward}' "
            "(Bernoulli rewards: env=synthetic env.reward=bernoulli)",
        )
        check.probability(self.stay, "stay")
        check.one_of(self.transitions, TRANSITIONS, "transitions")
        check.positive(self.prior_concentration, "prior_concentration")
        smallest = smallest_transition(self.n_states, self.stay, self.transitions)
        needed = MIN_CONCENTRATION / smallest if smallest > 0 else 0.0
        check.require(
            self.prior_concentration >= needed,
            "n_states",
            f"{self.n_states} states with stay={self.stay} make phi_hat entries as small as "
            f"{smallest:.3g}, and prior_concentration={self.prior_concentration:g} times them "
            f"underflows Gamma draws: lower env.n_states, or raise env.prior_concentration "
            f"to >= {needed:.6g}",
        )
        check.non_negative(self.prior_ridge, "prior_ridge")
        check.non_negative(self.data_seed, "data_seed")

    def settings(self) -> Settings:
        """The settings that determine the prepared (cached) data."""
        return Settings(
            min_user_ratings=self.min_user_ratings,
            min_item_ratings=self.min_item_ratings,
            rank=self.rank,
            als_reg=self.als_reg if self.als_reg == AUTO else float(self.als_reg),
            als_iterations=self.als_iterations,
            n_states=self.n_states,
            data_seed=self.data_seed,
        )


def load(p: MovieLensParams) -> Loaded:
    """The prepared data for ``p``: downloaded, built or read from the cache (memoised)."""
    root = releases.cache_root(p.cache_dir)
    return _load(p.release, p.data_dir, str(root), p.settings())


@functools.lru_cache(maxsize=4)
def _load(release: str, data_dir: str | None, root: str, settings: Settings) -> Loaded:
    folder = releases.source_folder(release, data_dir, Path(root))
    loaded = load_or_prepare(folder, settings, Path(root))
    d = loaded.data.diagnostics
    log.info(
        "movielens: %s users x %s movies from %s; train/test cluster agreement %.2f; %s %s",
        d["filtered"]["users"],
        d["filtered"]["movies"],
        folder,
        d["clusters"]["agreement"],
        "read from"
        if loaded.hit
        else "built and cached in"
        if loaded.cached
        else "built, not cached in",
        loaded.path,
    )
    return loaded


def describe(p: MovieLensParams) -> dict[str, Any]:
    """The prepared data's diagnostics (``nslb_cli.data.prepare``) and what the
    environment adds: the offline chain's change probability and the expected number of
    state changes per run (``expected_changes``)."""
    loaded = load(p)
    data = loaded.data
    phi_hat = transition_matrix(data.prior_means, p.stay, p.transitions)
    return {
        **data.diagnostics,
        "source": {**data.diagnostics["source"], "folder": str(loaded.source)},
        "offline_model": {
            "transitions": p.transitions,
            "mean_change_probability": round(float(1.0 - phi_hat.diagonal().mean()), 6),
            "prior_ridge": p.prior_ridge,
        },
        "expected_changes_per_run": round(expected_changes(p, data), 4),
    }


def provenance(p: MovieLensParams) -> dict[str, Any]:
    """What a run folder records of its data (``data.json``): ``fingerprint`` (SHA-256 of
    the ratings file), ``release`` (the release, or the name of the ``data_dir`` folder),
    ``source`` (its download address, or the folder) and the ``describe`` diagnostics."""
    diagnostics = describe(p)
    return {
        "fingerprint": diagnostics["source"]["fingerprint"],
        "release": Path(p.data_dir).expanduser().name if p.data_dir is not None else p.release,
        "source": (
            diagnostics["source"]["folder"] if p.data_dir is not None else releases.url(p.release)
        ),
        "diagnostics": diagnostics,
    }


def expected_changes(p: MovieLensParams, data: Prepared) -> float:
    """``E[#{t <= n : S_t != S_{t-1}}]`` with ``S_1`` uniform and ``S_t ~ phi*[S_{t-1}]``,
    averaged over the superusers of seeds ``0..CHANGE_DRAWS-1`` (``phi*`` depends on them
    in the literal form; the structured form gives ``(n - 1)(1 - stay)`` for any)."""
    phi = np.stack(
        [
            transition_matrix(data.test_users[superusers(data, seed)], p.stay, p.transitions)
            for seed in range(CHANGE_DRAWS)
        ]
    )
    leave = 1.0 - np.diagonal(phi, axis1=1, axis2=2)
    state = np.full(leave.shape, 1.0 / leave.shape[1])
    total = np.zeros(len(phi))
    for _ in range(p.horizon - 1):
        total += (state * leave).sum(axis=1)
        state = np.einsum("rs,rst->rt", state, phi)
    return float(total.mean())


def transition_matrix(points: np.ndarray, stay: float, form: str = "structured") -> np.ndarray:
    """``(S, S)`` transition matrix of the superuser with behaviours ``points (S, d)``."""
    S = len(points)
    distance = ((points[:, None, :] - points[None, :, :]) ** 2).sum(axis=-1)
    off = ~np.eye(S, dtype=bool)
    if form == "structured":
        logits = np.where(off, -distance, -np.inf)
        similarity = normalised_exp(logits)
        move = (1.0 - stay) * (JUMP_WEIGHT / (S - 1) + SIMILARITY_WEIGHT * similarity)
        return np.where(off, move, stay)
    if form == "literal":
        jump = np.where(off, stay / (S - 1), 1.0 - stay)
        return JUMP_WEIGHT * jump + SIMILARITY_WEIGHT * normalised_exp(distance)
    raise ValueError(f"unknown transition form {form!r}")


def smallest_transition(n_states: int, stay: float, form: str) -> float:
    """A lower bound on every entry of ``transition_matrix``, whatever the points."""
    if form == "literal":
        return JUMP_WEIGHT * min(stay / (n_states - 1), 1.0 - stay)
    return min(stay, (1.0 - stay) * JUMP_WEIGHT / (n_states - 1))


@dataclass(frozen=True)
class Catalogue:
    """The kept movies of each genre, flattened: genre ``g`` owns
    ``movies[start[g] : start[g] + count[g]]``. Genres without a kept movie are left out."""

    movies: np.ndarray
    start: np.ndarray
    count: np.ndarray
    names: tuple[str, ...]

    @classmethod
    def of(cls, data: Prepared) -> Catalogue:
        """The genres of the kept movies; without any (a ratings folder without
        ``items.csv``) one group of all kept movies, so each slot is a movie drawn uniformly
        among them."""
        if not data.genres.any():
            n = len(data.movie_ids)
            return cls(np.arange(n), np.zeros(1, dtype=np.int64), np.array([n]), (ALL_MOVIES,))
        present = np.flatnonzero(data.genres.any(axis=0))
        members = [np.flatnonzero(data.genres[:, g]) for g in present]
        count = np.array([len(m) for m in members], dtype=np.int64)
        start = np.concatenate([[0], np.cumsum(count)[:-1]])
        names = tuple(data.genre_names[g] for g in present)
        return cls(np.concatenate(members), start, count, names)

    def sample(self, rng: np.random.Generator, rounds: int, k: int) -> tuple[np.ndarray, ...]:
        """``(genres, movies)``, each ``(rounds, k)``: genres uniform with replacement,
        then one movie uniformly from each genre."""
        genres = rng.integers(len(self.count), size=(rounds, k))
        offset = np.floor(rng.random((rounds, k)) * self.count.take(genres)).astype(np.int64)
        return genres, self.movies.take(self.start.take(genres) + offset)


def superusers(data: Prepared, seed: int) -> np.ndarray:
    """``(S,)`` the test user behind each state for ``seed``: one per test cluster."""
    rng = generator(seed, Stream.PARAMETERS)
    users = []
    for s in range(len(data.train_of)):
        members = np.flatnonzero(data.test_labels == s)
        users.append(members[rng.integers(len(members))])
    return np.array(users, dtype=np.int64)


class MovieLens:
    """MovieLens superusers switching between real users (Hong et al., 2021, section 5.2)."""

    Params = MovieLensParams
    contextual = True  # each round's arms are different movies
    files = ("data_dir", "cache_dir")  # folders: normalised; the data's identity is data.json's
    provenance = staticmethod(provenance)  # data.json of a run folder (nslb_cli.runner.job)

    @staticmethod
    def sizes(p: MovieLensParams, n_runs: int) -> Sizes:
        """A batch's sizes (for its memory estimate): each arm's context is a movie's
        ``rank`` factors, so the agents' statistics grow with ``env.rank``."""
        return Sizes(n_runs, p.horizon, p.n_arms, p.n_states, p.rank, features_key="env.rank")

    @staticmethod
    def build(p: MovieLensParams, seeds: np.ndarray) -> World:
        """A world for ``seeds``; seed ``k``'s realisation depends only on ``p`` and ``k``."""
        seeds = np.asarray(seeds, dtype=np.int64)
        data = load(p).data
        S, K, n, R = p.n_states, p.n_arms, p.horizon, len(seeds)
        catalogue = Catalogue.of(data)
        users = np.stack([superusers(data, int(s)) for s in seeds])  # (R, S)
        true_phi = np.stack(
            [transition_matrix(data.test_users[u], p.stay, p.transitions) for u in users]
        )
        states = latent_path(seeds, true_phi, n)
        items = np.empty((R, n, K), dtype=np.int64)
        for r, seed in enumerate(seeds):
            items[r] = catalogue.sample(generator(int(seed), Stream.CONTEXTS), n, K)[1]
        noise = np.stack([generator(int(s), Stream.NOISE).normal(0.0, p.sigma, n) for s in seeds])
        problem = Problem(n_arms=K, n_states=S, horizon=n, sigma=p.sigma, n_runs=R)
        return World(
            problem,
            seeds,
            states,
            true_means(data, users, states, items),
            noise,
            offline_model(p, data, R),
            items=items,
            features=data.train_items,
        )


def true_means(
    data: Prepared, users: np.ndarray, states: np.ndarray, items: np.ndarray
) -> np.ndarray:
    """``mu(a, X_t, S_t; theta*) = U_{i_{S_t}} · V_j``, ``j = items[r, t, a]``, ``(R, n, K)``."""
    R, n, K = items.shape
    n_movies = len(data.test_items)
    means = np.empty((R, n, K))
    for r in range(R):
        behaviour = data.test_users[users[r]]  # (S, d)
        table = (behaviour[:, None, :] * data.test_items[None, :, :]).sum(axis=-1)
        np.take(table, states[r][:, None] * n_movies + items[r], out=means[r])
    return means


def latent_path(seeds: np.ndarray, phi: np.ndarray, n: int) -> np.ndarray:
    """``S_1..S_n`` per seed, ``(R, n)``: ``S_1`` uniform, then ``S_t ~ phi[S_{t-1}]``, the
    inverse-CDF draw (``categorical``) with the run's ``t``-th uniform.
    """
    S = phi.shape[-1]
    rngs = [generator(int(s), Stream.PATH) for s in seeds]
    first = np.array([g.integers(S) for g in rngs], dtype=np.int64)
    uniforms = np.stack([g.random(n) for g in rngs])
    after = successors(phi, uniforms).transpose(2, 0, 1).reshape(n, -1)  # [t, r * S + s]
    states = np.empty((n, len(seeds)), dtype=np.int64)
    states[0] = first
    offset = np.arange(len(seeds)) * S
    for t in range(1, n):
        states[t] = np.take(after[t], offset + states[t - 1])
    return np.ascontiguousarray(states.T)


def successors(phi: np.ndarray, uniforms: np.ndarray) -> np.ndarray:
    """``(R, S, n)``: ``categorical(phi[r, s], uniforms[r, t])`` for every state ``s`` and round
    ``t``, with the same sums and comparisons: the number of cumulative masses at or below
    ``u_t`` times the total mass (capped at ``S - 1``)."""
    cdf = np.cumsum(phi, axis=-1)  # (R, S, S)
    threshold = uniforms[:, None, :] * cdf[:, :, -1:]  # (R, S, n)
    below = (cdf[:, :, :, None] <= threshold[:, :, None, :]).sum(axis=2)
    return np.minimum(below, phi.shape[-1] - 1)


def offline_model(p: MovieLensParams, data: Prepared, runs: int) -> OfflineModel:
    """What the agents are told; identical for every seed (it comes from the train half)."""
    S, d = data.prior_means.shape
    phi_hat = transition_matrix(data.prior_means, p.stay, p.transitions)
    covariance = data.prior_covariances + p.prior_ridge * np.eye(d)

    def per_run(array: np.ndarray) -> np.ndarray:
        return np.repeat(array[None], runs, axis=0)

    return OfflineModel(
        means=per_run(data.prior_means),
        mean_sd=np.zeros((runs, S, 0)),
        transitions=per_run(phi_hat),
        concentration=per_run(p.prior_concentration * phi_hat),
        initial=np.full((runs, S), 1.0 / S),
        covariance=per_run(covariance),
    )
