"""CD-UCB and CD-TS: per-arm bandit algorithms restarted by a change detector (section 5).

The structure is Cao et al. (2019)'s M-UCB. Per run the agent keeps, since its last restart
``r``, each arm's pull count ``n_a`` and reward sum ``Y_a``, and a
:class:`~nslb_cli.detectors.MeanShiftDetector` on each arm's last ``tau`` rewards. Round
``t`` (0-based):

1. forced uniform exploration: if ``gamma > 0`` and ``k = (t - r) mod floor(K / gamma) < K``,
   pull arm ``k``; otherwise pull the base algorithm's arm (below);
2. observe ``R_t``; if the detector fires, restart globally, as M-UCB does: every arm's
   statistics and every arm's detector window are cleared and ``r = t + 1``.

Base algorithms, with ``sigma`` the sub-Gaussian scale of the rewards (the noise standard
deviation of Gaussian rewards, ``1/2`` for Bernoulli ones: ``Problem.sigma``) and
``m = t - r + 1`` the rounds since the restart:

* ``cd_ucb``: UCB1, ``A_t = argmax_a Y_a / n_a + sigma sqrt(8 log m / n_a)`` (unpulled arms
  first, lowest index first). For ``sigma = 1/2``, the sub-Gaussian constant of a reward in
  ``[0, 1]``, this is UCB1's ``sqrt(2 log m / n_a)``.
* ``cd_ts``: Thompson sampling, ``theta_a`` drawn from each mean's posterior given its
  ``n_a`` rewards summing to ``Y_a`` under the reward model's default prior
  (:meth:`~nslb_cli.core.rewards.RewardModel.sample_given_sums`), ``A_t = argmax_a theta_a``:
  Gaussian rewards, ``theta_a ~ N(Y_a / (n_a + 1), sigma^2 / (n_a + 1))`` (a ``N(0,
  sigma^2)`` prior, known noise); Bernoulli rewards, ``theta_a ~ Beta(1 + Y_a, 1 + n_a -
  Y_a)`` (a uniform prior); both from Agrawal & Goyal.

Defaults: ``tau = 100`` and ``threshold = sigma sqrt(tau log(2 K n^2) / 2)`` (the paper's,
:func:`~nslb_cli.detectors.cao_threshold`, when ``null``; for Bernoulli rewards
``sigma = 1/2``). ``gamma = 0``: no forced
exploration. The paper's description of these baselines has none, and at the paper's
scale it cannot help: Cao et al.'s ``gamma = sqrt(K L log n / n)`` is about 0.46 for n = 2000
and 10 changes (``null`` computes it, :func:`~nslb_cli.agents.tuning.cao_exploration`),
spending 46 % of the rounds on uniform play, while an arm explored at rate ``gamma / K``
collects ``gamma / K · 200 < tau / 2`` rewards in a 200-round segment, too few for its
detector to see a change of that arm.
"""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass

import numpy as np

from nslb_cli.agents.detectors import MeanShiftDetector, cao_threshold
from nslb_cli.agents.restarting import Restarting
from nslb_cli.agents.tuning import cao_exploration
from nslb_cli.config import validators as check
from nslb_cli.core.problem import OfflineModel, Problem
from nslb_cli.core.rng import BatchRNG


@dataclass
class RestartedParams:
    """Parameters shared by ``cd_ucb`` and ``cd_ts``; ``None`` means computed (module doc)."""

    name: str = "cd_ucb"
    tau: int = 100
    threshold: float | None = None
    gamma: float | None = 0.0

    def __post_init__(self) -> None:
        check.int64(self.tau, "tau")
        check.even_window(self.tau, "tau")
        if self.threshold is not None:
            check.positive(self.threshold, "threshold")
        if self.gamma is not None:
            check.probability(self.gamma, "gamma")
            check.require(
                self.gamma == 0 or self.gamma >= MIN_GAMMA,
                "gamma",
                f"must be 0 (no forced exploration) or >= {MIN_GAMMA:g} (smaller ones overflow "
                f"the exploration period K / gamma), got {self.gamma}",
            )


@dataclass
class CDUCBParams(RestartedParams):
    name: str = "cd_ucb"


@dataclass
class CDTSParams(RestartedParams):
    name: str = "cd_ts"


MIN_GAMMA = 1e-9
"""Smallest positive forced-exploration rate ``gamma``. The exploration period
``floor(K / gamma)`` is an int64: ``gamma = 1e-300`` overflows it (numpy warns of an invalid
cast). At 1e-9 the period is ``K · 1e9`` rounds, far beyond any horizon, and fits int64 for
any number of arms that fits in memory (up to 9e9). The detector's ``threshold`` needs no
upper bound: it is only compared with, and a finite one is never overflowed."""


class DetectorRestarted(Restarting):
    """A per-arm bandit algorithm with forced exploration, restarted by a change detector."""

    fixed_arms = True

    def __init__(
        self, params: RestartedParams, problem: Problem, model: OfflineModel, rng: BatchRNG
    ) -> None:
        R, K = problem.n_runs, problem.n_arms
        threshold = params.threshold
        if threshold is None:
            threshold = cao_threshold(problem, params.tau)
        detector = MeanShiftDetector(R, K, params.tau, threshold)
        super().__init__(params, problem, model, rng, detector)
        gamma = cao_exploration(problem, model) if params.gamma is None else params.gamma
        gamma = np.broadcast_to(np.asarray(gamma, dtype=float), (R,))
        # Exploration period floor(K / gamma); 0 marks runs without forced exploration.
        with np.errstate(divide="ignore"):
            self.period = np.where(gamma > 0, np.floor(K / gamma), 0).astype(np.int64)
        self.pulls = np.zeros((R, K))
        self.sums = np.zeros((R, K))

    @abstractmethod
    def choose(self, t: int) -> np.ndarray:
        """The base algorithm's arm for every run, ``(R,)``."""

    def act(self, t: int, contexts: np.ndarray | None) -> np.ndarray:
        base = self.choose(t)
        phase = (t - self.restart) % np.maximum(self.period, 1)
        forced = (self.period > 0) & (phase < self.problem.n_arms)
        return np.where(forced, phase, base)

    def update(
        self, t: int, contexts: np.ndarray | None, actions: np.ndarray, rewards: np.ndarray
    ) -> None:
        runs = np.arange(self.problem.n_runs)
        self.pulls[runs, actions] += 1.0
        self.sums[runs, actions] += rewards
        self.restart_where(self.detector.update(actions, rewards), t)

    def forget(self, runs: np.ndarray) -> None:
        self.pulls[runs] = 0.0
        self.sums[runs] = 0.0


class CDUCB(DetectorRestarted):
    """CD-UCB: UCB1 restarted by the mean-shift detector of Cao et al. (2019).

    See the module docstring."""

    Params = CDUCBParams

    def choose(self, t: int) -> np.ndarray:
        rounds = (t - self.restart + 1).astype(float)[:, None]
        with np.errstate(divide="ignore", invalid="ignore"):
            index = self.sums / self.pulls + self.problem.sigma * np.sqrt(
                8.0 * np.log(rounds) / self.pulls
            )
        return np.where(self.pulls == 0, np.inf, index).argmax(axis=1)


class CDTS(DetectorRestarted):
    """CD-TS: Thompson sampling restarted by the mean-shift detector of Cao et al. (2019).

    See the module docstring."""

    Params = CDTSParams

    def choose(self, t: int) -> np.ndarray:
        theta = self.problem.reward_model.sample_given_sums(self.pulls, self.sums, self.rng)
        return theta.argmax(axis=1)
