"""Piecewise-stationary bandits, the field's standard problems (docs/design.md §3.3).

``K`` arms whose means are constant on segments of rounds: ``means[j]`` (a row of ``K``
means) holds from round ``change_points[j]`` (0-based, the first is 0) to the round before
the next change point. The table is given in the config (``means``, ``change_points``) or as
a CSV file (``table``): a header ``start,<arm>,…``, then one row per segment, its first round
and its arms' means; Gaussian or Bernoulli rewards.

The latent states are the distinct rows of the table. The offline model is the truth: the
rows as known means, the change rate ``Υ / n`` as the probability of leaving a state (spread
uniformly over the others), and a uniform first state.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from nslb_cli.bandit.problem import OfflineModel, Problem
from nslb_cli.bandit.rewards import Bernoulli, Gaussian, RewardModel
from nslb_cli.bandit.rng import Stream, generator
from nslb_cli.bandit.world import World
from nslb_cli.common import validators as check
from nslb_cli.common.errors import ConfigError
from nslb_cli.envs.synthetic import MIN_SIGMA, uniform_switching

REWARDS = ("bernoulli", "gaussian")
CHANGE_POINTS = [0, 1000, 2000, 3000, 4000]  # Problem 1's


def _problem_1() -> list[list[float]]:
    """Besson et al. (2022)'s Problem 1: one arm changes at a time."""
    return [
        [0.3, 0.5, 0.9],
        [0.3, 0.2, 0.9],
        [0.3, 0.2, 0.1],
        [0.7, 0.2, 0.1],
        [0.7, 0.5, 0.1],
    ]


@dataclass
class PiecewiseParams(check.Section):
    """Parameters of ``env=piecewise``; defaults: Besson et al. (2022)'s Problem 1."""

    scales = ("sigma", "means")

    name: str = "piecewise"
    reward: str = "bernoulli"
    sigma: float = 0.5
    horizon: int = 5000
    means: list[list[float]] = field(default_factory=_problem_1)
    change_points: list[int] = field(default_factory=lambda: list(CHANGE_POINTS))
    table: str | None = None
    n_arms: int | None = None
    n_states: int | None = None

    def validate(self) -> None:
        check.one_of(self.reward, REWARDS, "reward")
        check.at_least(self.sigma, MIN_SIGMA, "sigma", "smaller noise underflows likelihoods")
        check.positive(self.horizon, "horizon")
        if self.table is not None:  # the table is all of the world: nothing else describes it
            check.require(
                (self.means, self.change_points) == (_problem_1(), CHANGE_POINTS),
                "table",
                "replaces means and change_points, which are given too (by a preset or the "
                "command line): leave them out, or the table",
            )
            self.means, self.change_points = read_table(Path(self.table).expanduser())
        rows = segments(self.means, self.change_points, self.horizon, self.reward)
        arms, states = rows.shape[1], len(np.unique(rows, axis=0))
        for key, derived in (("n_arms", arms), ("n_states", states)):
            given = getattr(self, key)
            check.require(
                given is None or given == derived,
                key,
                f"the table has {derived}, got {given} (leave it out: it is derived)",
            )
            setattr(self, key, derived)


def segments(
    means: list[list[float]], change_points: list[int], horizon: int, reward: str
) -> np.ndarray:
    """The table as a ``(segments, K)`` array, checked against the change points."""
    try:
        rows = np.array(means, dtype=float)
    except (TypeError, ValueError):
        raise ConfigError(
            "means", "must be rows of numbers, one row of K means per segment"
        ) from None
    check.require(
        rows.ndim == 2 and rows.shape[1] >= 2,
        "means",
        f"must be rows of at least 2 means each, got shape {rows.shape}",
    )
    check.require(bool(np.isfinite(rows).all()), "means", "must be finite numbers")
    if reward == "bernoulli":
        check.require(
            bool(((rows >= 0) & (rows <= 1)).all()),
            "means",
            "must be probabilities in [0, 1] for Bernoulli rewards",
        )
    points = list(change_points)
    check.require(
        len(points) == len(rows),
        "change_points",
        f"one per segment ({len(rows)} rows of means), got {len(points)}",
    )
    check.require(points[0] == 0, "change_points", f"the first segment starts at 0, got {points}")
    check.require(
        all(a < b for a, b in zip(points, points[1:], strict=False)) and points[-1] < horizon,
        "change_points",
        f"must increase and stay below the horizon ({horizon}), got {points}",
    )
    return rows


def read_table(path: Path) -> tuple[list[list[float]], list[int]]:
    """``(means, change_points)`` from a CSV file: ``start,<arm>,…`` then a row a segment;
    blank lines are skipped, and a bad row is named by its line."""
    try:
        with path.open(newline="", encoding="utf-8-sig") as handle:
            lines = list(enumerate(csv.reader(handle), 1))
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError("table", f"cannot read {path}: {err}") from None
    rows = [(number, row) for number, row in lines if any(cell.strip() for cell in row)]
    if len(rows) < 2 or rows[0][1][0].strip() != "start":
        raise ConfigError("table", f"{path}: expected a header start,<arm>,… and a row a segment")
    arms = len(rows[0][1]) - 1
    starts, means = [], []
    for number, row in rows[1:]:
        try:
            starts.append(int(row[0]))
            means.append([float(x) for x in row[1:]])
        except ValueError:
            raise ConfigError(
                "table", f"{path}, line {number}: expected a round and numbers, got {','.join(row)}"
            ) from None
        if len(means[-1]) != arms:
            raise ConfigError(
                "table",
                f"{path}, line {number}: {len(means[-1])} means for the header's {arms} arms",
            )
    return means, starts


def _reward_model(p: PiecewiseParams) -> RewardModel:
    return Bernoulli() if p.reward == "bernoulli" else Gaussian(p.sigma)


class Piecewise:
    """Piecewise-stationary bandit: a table of means and change points (Besson et al.,
    2022)."""

    Params = PiecewiseParams
    contextual = False
    files = ("table",)

    @staticmethod
    def build(p: PiecewiseParams, seeds: np.ndarray) -> World:
        """A world for ``seeds``: the table's means and path, each seed's own noise."""
        seeds = np.asarray(seeds, dtype=np.int64)
        rows = segments(p.means, p.change_points, p.horizon, p.reward)
        states_means, state_of_row = np.unique(rows, axis=0, return_inverse=True)
        S, K, n, R = len(states_means), rows.shape[1], p.horizon, len(seeds)
        row_of_round = np.searchsorted(np.asarray(p.change_points), np.arange(n), side="right") - 1
        path = np.asarray(state_of_row).reshape(-1)[row_of_round]
        reward = _reward_model(p)
        noise = np.stack([reward.noise(generator(int(s), Stream.NOISE), n) for s in seeds])
        changes = len(p.change_points) - 1
        transitions = uniform_switching(S, changes / n) if S > 1 else np.ones((1, 1))
        offline = OfflineModel(
            means=np.repeat(states_means[None], R, axis=0),
            mean_sd=np.zeros((R, S, K)),
            transitions=np.repeat(transitions[None], R, axis=0),
            concentration=None,
            initial=np.full((R, S), 1.0 / S),
        )
        problem = Problem(
            n_arms=K, n_states=S, horizon=n, sigma=reward.scale, n_runs=R, reward_model=reward
        )
        states = np.repeat(path[None], R, axis=0)
        mean_rewards = np.repeat(states_means[path][None], R, axis=0)
        return World(problem, seeds, states, mean_rewards, noise, offline)
