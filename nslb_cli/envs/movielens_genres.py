"""MovieLens genres as a switching latent bandit (Russo, Metelli & Restelli, TMLR 2024,
section 7; docs/design.md §3.6).

States are clusters of a release's users, arms its genres, outcomes its rating values
(``nslb_cli.data.genres``, cached). The observation model is the smoothed frequency of
each rating among the ratings a cluster gave to a genre,

    ``O[s, a, o] = (counts[s, a, o] + smoothing) / (sum_o' counts[s, a, o'] + N smoothing)``

(``smoothing = 1``: add-one, so a genre that a cluster never rated has uniform outcomes).
The arms are the ``n_arms`` most rated genres, in the release's genre order. Rewards of the
rating values ``v_o``: ``spread`` maps them linearly onto ``[0, 1]`` (1..5 to 0, 0.25, …, 1);
``authors`` divides them by the largest (1..5 to 0.2, …, 1, as the authors' code).

``O`` and ``r`` are the same for every seed; ``P`` is drawn per seed from its parameters
stream as ``env=switching_latent`` draws it (``draw_transitions``), and the world is
``categorical_world``'s: the path, outcomes and what agents are told are as there.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from nslb_cli.bandit.rng import Stream, generator
from nslb_cli.bandit.world import World
from nslb_cli.common import validators as check
from nslb_cli.common.errors import ConfigError
from nslb_cli.data import releases
from nslb_cli.data.genres import STEPS, GenreCounts, GenreSettings, load_or_count
from nslb_cli.envs.switching_latent import MAX_SIZE, categorical_world, draw_transitions

REWARDS = ("spread", "authors")


@dataclass
class MovieLensGenresParams(check.Section):
    """Parameters of ``env=movielens_genres``; defaults: the authors' 5 clusters x 18 genres."""

    name: str = "movielens_genres"
    release: str = "ml-1m"
    data_dir: str | None = None
    cache_dir: str | None = None
    min_user_ratings: int = 20
    n_states: int = 5
    n_arms: int = 18
    horizon: int = 10000
    rewards: str = "spread"
    smoothing: float = 1.0
    transition_multiplier: float = 20.0
    min_transition_prob: float | None = None
    prior_concentration: float = 1.0
    data_seed: int = 0

    def validate(self) -> None:
        releases.check_source(self.release, self.data_dir)
        for key in ("n_states", "n_arms"):
            value = getattr(self, key)
            check.require(1 <= value <= MAX_SIZE, key, f"must be from 1 to {MAX_SIZE}, got {value}")
        check.positive(self.min_user_ratings, "min_user_ratings")
        check.positive(self.horizon, "horizon")
        check.non_negative(self.data_seed, "data_seed")
        check.one_of(self.rewards, REWARDS, "rewards")
        check.positive(self.smoothing, "smoothing")
        check.non_negative(self.transition_multiplier, "transition_multiplier")
        check.at_least(
            self.prior_concentration,
            0.01,
            "prior_concentration",
            "smaller concentrations underflow Gamma draws",
        )
        if self.min_transition_prob is not None:
            bound = 1 / self.n_states
            check.require(
                0 < self.min_transition_prob < bound,
                "min_transition_prob",
                f"must lie in (0, 1/n_states) = (0, {bound:.4g})",
            )

    def settings(self) -> GenreSettings:
        """The settings that determine the cached counts."""
        return GenreSettings(self.min_user_ratings, self.n_states, self.data_seed)


def load(p: MovieLensGenresParams) -> GenreCounts:
    """The counts for ``p``: downloaded, counted or read from the cache (memoised)."""
    return _load(p.release, p.data_dir, str(releases.cache_root(p.cache_dir)), p.settings())


@functools.lru_cache(maxsize=4)
def _load(release: str, data_dir: str | None, root: str, settings: GenreSettings) -> GenreCounts:
    return load_or_count(
        releases.source_folder(release, data_dir, Path(root)), settings, Path(root)
    )


def arms(data: GenreCounts, n_arms: int) -> np.ndarray:
    """The ``n_arms`` most rated genres (ties: the earlier), in the release's genre order."""
    totals = data.counts.sum(axis=(0, 2))
    rated = int((totals > 0).sum())
    if n_arms > rated:
        raise ConfigError(
            "env.n_arms",
            f"{n_arms} arms, but the release has {rated} genres "
            f"with ratings: set env.n_arms to at most {rated}",
        )
    return np.sort(np.argsort(-totals, kind="stable")[:n_arms])


def model(p: MovieLensGenresParams, data: GenreCounts) -> tuple[np.ndarray, np.ndarray]:
    """``O (S, K, N)`` (smoothed frequencies of the chosen genres) and the rewards ``r (N,)``."""
    counts = data.counts[:, arms(data, p.n_arms)] + p.smoothing
    obs = counts / counts.sum(axis=2, keepdims=True)
    low, high = float(data.levels.min()), float(data.levels.max())
    if p.rewards == "spread":
        return obs, (data.levels - low) / (high - low)
    if low <= 0:
        raise ConfigError(
            "env.rewards",
            "'authors' divides ratings by the largest, so they must "
            f"be positive, not {low:g}: use env.rewards=spread",
        )
    return obs, data.levels / high


def provenance(p: MovieLensGenresParams) -> dict[str, Any]:
    """What a run folder records of its data (``data.json``): the ratings file's SHA-256,
    the release (or ``data_dir``'s folder name), where it came from, and the genres, rating
    values and cluster sizes used."""
    data = load(p)
    return {
        "fingerprint": data.fingerprint,
        "release": Path(p.data_dir).expanduser().name if p.data_dir is not None else p.release,
        "source": str(Path(p.data_dir).expanduser()) if p.data_dir else releases.url(p.release),
        "diagnostics": {
            "arms": [data.genre_names[g] for g in arms(data, p.n_arms)],
            "ratings": data.levels.tolist(),
            "cluster_sizes": data.cluster_sizes.tolist(),
            "ratings_kept": dict(zip(STEPS, data.kept.tolist(), strict=True)),
        },
    }


class MovieLensGenres:
    """User clusters switching while genres are recommended (Russo et al., 2024, section 7)."""

    Params = MovieLensGenresParams
    contextual = False
    outcome_laws = True  # agents are told O[s, a, ·] (OfflineModel.emissions): sl_ec runs here
    files = ("data_dir", "cache_dir")
    provenance = staticmethod(provenance)

    @staticmethod
    def true_model(p: MovieLensGenresParams) -> bool:
        """Agents are told the true ``P``, ``O`` and ``r`` (umTS's prior aside)."""
        return True

    @staticmethod
    def build(p: MovieLensGenresParams, seeds: np.ndarray) -> World:
        """A world for ``seeds``; seed ``k``'s realisation depends only on ``p`` and ``k``."""
        seeds = np.asarray(seeds, dtype=np.int64)
        obs, r = model(p, load(p))
        S, low = p.n_states, p.min_transition_prob
        P = np.stack(
            [
                draw_transitions(
                    S, p.transition_multiplier, low, generator(int(s), Stream.PARAMETERS)
                )
                for s in seeds
            ]
        )
        observations = np.repeat(obs[None], len(seeds), axis=0)
        return categorical_world(P, observations, r, seeds, p.horizon, p.prior_concentration)
