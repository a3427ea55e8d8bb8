"""A latent bandit learned from logged interactions (docs/design.md §3.8): anyone's log file of
``sequence, t, arm, reward`` rows (``nslb_cli.data.logs``) becomes a world and an offline model.

1. **Split** the sequences (sorted by id) in two halves as MovieLens' ratings are split
   (``nslb_cli.data.prepare.split``): ``floor(M / 2)`` drawn uniformly at random from
   ``data_seed``'s split stream are the agents' half, the other ``ceil(M / 2)`` the world's.
2. **Fit** each half by Baum–Welch (``nslb_cli.learning.fit``: ``n_states`` states,
   ``offline_restarts`` restarts seeded by ``data_seed``; Gaussian rewards with one shared
   ``sigma``, or Bernoulli).
3. **World**: the world half's fit is the truth. ``S_1 ~ pi`` and ``S_t ~ P[S_{t-1}]`` by
   inverse CDF, one uniform of the seed's path stream a round (the first draws ``S_1``);
   rewards ``mu(a, S_t) + eps_t``, ``eps_t ~ N(0, sigma^2)``, or ``1[u_t < mu(a, S_t)]``, one
   number of the seed's noise stream a round. Agents are told the world's reward model.
4. **Offline model**: ``posterior`` of the agents' half's fit (``nslb_cli.learning``): its
   means, their sd, the Dirichlet of ``P`` and its mean, ``pi``. Its states are relabelled to
   the world's by ``align_states`` on the means: agents behave the same under any labelling,
   but the believed state is then comparable with the world's.

The fits are cached in ``<cache>/prepared/logged-<hash>.json`` (``nslb_cli.data.json_cache``:
plain JSON, ``Fit.to_dict``), keyed by the log file's SHA-256 and the fit's settings; a damaged
entry is fitted again. The world's identity is the file's content: ``data.json`` records its
SHA-256 as the fingerprint, wherever the file lies.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from nslb_cli.bandit.problem import OfflineModel, Problem
from nslb_cli.bandit.rewards import Bernoulli, Gaussian, RewardModel
from nslb_cli.bandit.rng import Stream, categorical, generator
from nslb_cli.bandit.world import World
from nslb_cli.common import validators as check
from nslb_cli.common.errors import ConfigError
from nslb_cli.data import json_cache, prepared_cache, releases
from nslb_cli.data.logs import LoggedRounds, check_arms, check_clicks, read_logs
from nslb_cli.data.prepare import Purpose, split, stream
from nslb_cli.learning import (
    Fit,
    Logs,
    Posterior,
    align_states,
    code_version,
    fit,
    posterior,
)

log = logging.getLogger("nslb")

REWARDS = ("gaussian", "bernoulli")
VERSION = 1  # bump when this module's change changes the fits (nslb_cli.learning's own is hashed)


@dataclass
class LoggedParams(check.Section):
    """Parameters of ``env=logged``; ``logs`` is required, the arms are the file's."""

    name: str = "logged"
    logs: str | None = None
    reward: str = "gaussian"
    n_states: int = 5
    n_arms: int | None = None
    horizon: int = 2000
    offline_restarts: int = 3
    data_seed: int = 0
    cache_dir: str | None = None

    def validate(self) -> None:
        check.one_of(self.reward, REWARDS, "reward")
        check.require(self.n_states >= 2, "n_states", f"must be >= 2, got {self.n_states}")
        check.positive(self.horizon, "horizon")
        check.positive(self.offline_restarts, "offline_restarts")
        check.non_negative(self.data_seed, "data_seed")
        check.require(
            self.logs is not None,
            "logs",
            "name the file of logged interactions: env.logs=PATH (CSV or Parquet with the "
            "columns sequence, t, arm, reward)",
        )
        path = self.path
        logged = logged_rounds(path)
        check_arms(logged, path, self.n_arms)
        if self.reward == "bernoulli":
            check_clicks(logged, path)
        self.n_arms = logged.n_arms
        world, agents = (len(half) for half in halves(logged.n_sequences, self.data_seed))
        check.require(
            min(world, agents) >= self.n_states,
            "n_states",
            f"{path}: {logged.n_sequences} sequences, halves of {world} (the world's) and "
            f"{agents} (the agents'): each half needs n_states={self.n_states} or more; "
            "lower n_states or log more sequences",
        )

    @property
    def path(self) -> Path:
        """The log file, ``~`` expanded."""
        assert self.logs is not None
        return Path(self.logs).expanduser()

    def settings(self) -> FitSettings:
        """The settings that determine the fits (the cache key's)."""
        return FitSettings(self.n_states, self.reward, self.offline_restarts, self.data_seed)


@dataclass(frozen=True)
class FitSettings:
    """What determines the two fits of a log file, besides its content and the code of
    ``nslb_cli.learning`` (EM's tolerance and iteration limit are its defaults)."""

    n_states: int
    emission: str
    restarts: int
    seed: int


@dataclass(frozen=True)
class Fits:
    """The two fits of a log file: ``world`` (the truth) and ``agents`` (the offline model's
    source, its states not yet aligned), and where they are cached."""

    world: Fit
    agents: Fit
    path: Path
    hit: bool
    cached: bool = True


def fingerprint(path: Path) -> str:
    """The log file's identity: the SHA-256 of its content (one line if unreadable)."""
    try:
        return prepared_cache.file_digest(path)
    except OSError as err:
        raise ConfigError("logs", f"cannot read {path}: {err.strerror or err}") from None


def logged_rounds(path: Path) -> LoggedRounds:
    """The rounds of the log file ``path`` (memoised by its content)."""
    return _read(str(path), fingerprint(path))


@functools.lru_cache(maxsize=4)
def _read(path: str, digest: str) -> LoggedRounds:
    return read_logs(Path(path))


def halves(n_sequences: int, data_seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The sequences of the world's half and of the agents' (``floor(M / 2)`` drawn uniformly,
    as MovieLens' train half: ``prepare.split`` of the split stream)."""
    agents = split(n_sequences, stream(data_seed, Purpose.SPLIT))
    return np.flatnonzero(~agents), np.flatnonzero(agents)


def fits(p: LoggedParams) -> Fits:
    """The fits of ``p``'s log file: from the cache, or fitted and cached (memoised)."""
    path = p.path
    root = releases.cache_root(p.cache_dir)
    return _fits(str(path), fingerprint(path), p.settings(), str(root))


@functools.lru_cache(maxsize=4)
def _fits(path: str, digest: str, settings: FitSettings, root: str) -> Fits:
    found = load_or_fit(_read(path, digest), digest, settings, Path(root))
    log.info(
        "logged: %d states fitted to each half of %s; %s %s",
        settings.n_states,
        path,
        "fits read from" if found.hit else "fitted and cached in" if found.cached else "fitted",
        found.path,
    )
    return found


def load_or_fit(logged: LoggedRounds, digest: str, s: FitSettings, root: Path) -> Fits:
    """The two fits of ``logged`` (SHA-256 ``digest``): from the cache, or fitted and cached."""
    key = prepared_cache.digest(
        {"version": VERSION, "learning": code_version(), "logs": digest, "settings": asdict(s)}
    )
    path = root / "prepared" / f"logged-{key}.json"
    record = json_cache.load(path, key)
    if record is not None:
        try:
            return Fits(*_restored(record, s, logged.n_arms), path, hit=True)
        except Exception as err:  # anything at all: fitted again, never trusted
            prepared_cache.warn(
                f"damaged fitted-model cache {path} ({prepared_cache.cause(err)}): fitting again"
            )
    world, agents = (_fit(logged, half, s) for half in halves(logged.n_sequences, s.seed))
    for name, one in (("world", world), ("agents", agents)):
        if not one.converged:
            log.warning(
                "logged: EM on the %s half stopped after %d iterations", name, one.iterations
            )
    stored = {
        "logs": {"sha256": digest, "arms": logged.arm_values.tolist()},
        "settings": asdict(s),
        "world": world.to_dict(),
        "agents": agents.to_dict(),
    }
    return Fits(world, agents, path, hit=False, cached=json_cache.save(path, key, stored))


def _fit(logged: LoggedRounds, half: np.ndarray, s: FitSettings) -> Fit:
    """Baum–Welch on the sequences ``half`` of ``logged``."""
    logs = Logs.from_sequences([logged.rounds(int(m)) for m in half])
    return fit(
        logs,
        s.n_states,
        logged.n_arms,
        s.emission,
        shared_noise=True,
        restarts=s.restarts,
        seed=s.seed,
    )


def _restored(record: dict[str, Any], s: FitSettings, n_arms: int) -> tuple[Fit, Fit]:
    """The two fits of a cache record; ``ValueError`` unless they are fits of ``s``'s
    emission with ``(S,)``, ``(S, S)`` and ``(S, K)`` parameters (and a Gaussian's ``(S,)``
    noise)."""
    restored = Fit.from_dict(record["world"]), Fit.from_dict(record["agents"])
    S = s.n_states
    for one in restored:
        given = (one.parameters.initial, one.parameters.transitions, one.parameters.means)
        shapes = [None if a is None else a.shape for a in given]
        noise = one.parameters.sigma
        if s.emission == "gaussian" and (noise is None or noise.shape != (S,)):
            shapes.append(None if noise is None else noise.shape)  # a Gaussian fit's sigma
        if one.emission != s.emission or shapes != [(S,), (S, S), (S, n_arms)]:
            raise ValueError(f"a {one.emission} fit of shapes {shapes}, not of {S} states")
    return restored


def reward_model(world: Fit) -> RewardModel:
    """The world's reward model: Gaussian with the fitted (shared) ``sigma``, or Bernoulli."""
    if world.emission == "bernoulli":
        return Bernoulli()
    assert world.parameters.sigma is not None
    return Gaussian(float(world.parameters.sigma[0]))


def offline_model(found: Fits, runs: int) -> OfflineModel:
    """What the agents are told: the agents' half's posterior, its states aligned with the
    world's; the same for every seed."""
    told: Posterior = posterior(found.agents)
    assert found.world.parameters.means is not None
    told = told.reordered(align_states(told.means, found.world.parameters.means))

    def per_run(array: np.ndarray) -> np.ndarray:
        return np.repeat(array[None], runs, axis=0)

    return OfflineModel(
        means=per_run(told.means),
        mean_sd=per_run(told.mean_sd),
        transitions=per_run(told.transitions),
        concentration=per_run(told.concentration),
        initial=per_run(told.initial),
    )


def latent_path(
    initial: np.ndarray, transitions: np.ndarray, seeds: np.ndarray, n: int
) -> np.ndarray:
    """``S_1..S_n`` per seed, ``(R, n)``: ``S_1 ~ initial`` with the run's first uniform of its
    path stream, then ``S_t ~ transitions[S_{t-1}]`` with its ``t``-th (``categorical``)."""
    uniforms = np.stack([generator(int(s), Stream.PATH).random(n) for s in seeds])
    states = np.empty((len(seeds), n), dtype=np.int64)
    states[:, 0] = categorical(np.broadcast_to(initial, (len(seeds), len(initial))), uniforms[:, 0])
    for t in range(1, n):
        states[:, t] = categorical(transitions[states[:, t - 1]], uniforms[:, t])
    return states


def provenance(p: LoggedParams) -> dict[str, Any]:
    """What a run folder records of its data (``data.json``): ``fingerprint``, the log file's
    SHA-256 (its content, not its path), ``source`` (the file) and diagnostics: the logs'
    sizes, the halves and each fit's log-likelihood."""
    path = p.path
    digest, logged, found = fingerprint(path), logged_rounds(path), fits(p)
    world, agents = halves(logged.n_sequences, p.data_seed)
    lengths = np.diff(logged.starts)

    def summary(one: Fit, half: np.ndarray) -> dict[str, Any]:
        return {
            "sequences": len(half),
            "rounds": int(lengths[half].sum()),
            "log_likelihood": round(float(one.log_likelihood[-1]), 4),
            "iterations": one.iterations,
            "converged": one.converged,
        }

    return {
        "fingerprint": digest,
        "source": str(path),
        "diagnostics": {
            "source": {"fingerprint": digest, "files": {path.name: digest}},
            "logs": {
                "sequences": logged.n_sequences,
                "rounds": len(logged.arms),
                "arms": logged.arm_values.tolist(),
            },
            "world": summary(found.world, world),
            "agents": summary(found.agents, agents),
        },
    }


class Logged:
    """A latent bandit learned from logged interactions: one half of the sequences is the
    world, the other the agents' offline model."""

    Params = LoggedParams
    contextual = False
    files = ("logs", "cache_dir")  # the file: its SHA-256 joins the config; the folder: normalised
    provenance = staticmethod(provenance)  # data.json of a run folder (nslb_cli.runner.job)

    @staticmethod
    def build(p: LoggedParams, seeds: np.ndarray) -> World:
        """A world for ``seeds``; seed ``k``'s realisation depends only on ``p`` and ``k``."""
        seeds = np.asarray(seeds, dtype=np.int64)
        found = fits(p)
        truth = found.world.parameters
        assert truth.means is not None
        reward = reward_model(found.world)
        states = latent_path(truth.initial, truth.transitions, seeds, p.horizon)
        noise = np.stack([reward.noise(generator(int(s), Stream.NOISE), p.horizon) for s in seeds])
        problem = Problem(
            n_arms=truth.means.shape[1],
            n_states=p.n_states,
            horizon=p.horizon,
            sigma=reward.scale,
            n_runs=len(seeds),
            reward_model=reward,
        )
        offline = offline_model(found, len(seeds))
        return World(problem, seeds, states, truth.means[states], noise, offline)
