"""BOCD-TS: Thompson sampling with Bayesian online change-point detection.

Mellor & Shapiro (2013, AISTATS), global switching model, with the run-length recursion of
Adams & MacKay (2007) (docs/design.md §4.8). The run length ``l_t`` counts the past rounds of
the current segment; hazard ``h``: ``l_{t+1} = l_t + 1`` w.p. ``1 - h``, ``0`` w.p. ``h``.
Hypothesis ``l`` carries per arm the conjugate posterior ``pi_l(a)`` of the segment's rewards
under the default Thompson prior (D25).

**Acting**: draw ``l ~ P(l_t | H_t)`` by inverse CDF, then ``theta_a ~ pi_l(a)``, and pull
``argmax_a theta_a`` (lowest index on ties); ``1 + K`` draws per run and round.

**Update** after ``(A_t, R_t)``, with the conjugate posterior predictive:

    log q(l)   = log P(l_t = l | H_t) + log p(R_t | pi_l(A_t))
    Q(l)       = exp(log q(l) - max log q) / sum_l' exp(log q(l') - max log q)
    P(l_{t+1} = l + 1 | H_{t+1}) = (1 - h) Q(l)          (growth)
    P(l_{t+1} = 0     | H_{t+1}) = h                     (change point)

and ``pi_{l+1}(A_t) = update(pi_l(A_t), R_t)``, ``pi_0`` the prior.

**Pruning** (deterministic): hypotheses with ``Q(l) < min_mass`` are discarded, then all but
the ``max_hypotheses - 1`` most probable; the MAP is always kept, the rest renormalised.

**Statistics** (``summary()``, per run): ``hazard``; ``detections``, rounds whose MAP segment
starts later than every earlier one; ``mean_run_length`` and ``mean_hypotheses`` averaged over
rounds; ``dropped_mass``, the total mass discarded by pruning.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from nslb_cli.agents.base import Agent, Style
from nslb_cli.agents.tuning import expected_changes, given_or
from nslb_cli.bandit import reward_kernels
from nslb_cli.bandit.problem import OfflineModel, Problem, Sizes
from nslb_cli.bandit.rewards import GAUSSIAN_KERNEL, RewardModel
from nslb_cli.bandit.rng import BatchRNG
from nslb_cli.common import validators as check
from nslb_cli.compiled.jit import inline, jit


@dataclass
class BOCDThompsonSamplingParams(check.Section):
    """BOCD-TS's parameters (module docstring); ``None`` means computed."""

    name: str = "bocd_ts"
    # change probability per round in [0, 1]; null: L / n, L the offline model's expected number of
    # changes
    hazard: float | None = None
    # at most this many run lengths are kept (>= 2; the least probable go)
    max_hypotheses: int = 100
    # run lengths whose posterior mass falls below this are discarded, in [0, 1)
    min_mass: float = 1e-3

    def validate(self) -> None:
        if self.hazard is not None:
            check.probability(self.hazard, "hazard")
        check.require(
            self.max_hypotheses >= 2,
            "max_hypotheses",
            f"must be >= 2 (a change point and a continuing run), got {self.max_hypotheses}",
        )
        check.probability(self.min_mass, "min_mass")
        check.require(
            self.min_mass < 1.0, "min_mass", f"must be < 1 (1 discards all), got {self.min_mass}"
        )


def default_prior(model: RewardModel) -> tuple[float, float]:
    """The statistics of the default Thompson prior: ``(0, sigma^2)`` for ``N(0, sigma^2)``,
    ``(1/2, 2)`` (mean, strength) for ``Beta(1, 1)``."""
    family, parameter = model.kernel
    if family == GAUSSIAN_KERNEL:
        return 0.0, float(parameter)
    return 0.5, 2.0


@jit
def bocd_arms(
    family: int,
    first: np.ndarray,
    second: np.ndarray,
    mass: np.ndarray,
    count: np.ndarray,
    generators: Any,
) -> np.ndarray:
    """Each run's arm: a run length drawn from ``mass[r, :count[r]]`` by inverse CDF, then
    ``argmax_a`` of one draw per arm from that hypothesis' posteriors."""
    R, _, K = first.shape
    arms = np.zeros(R, dtype=np.int64)
    for r in range(R):
        generator = generators[r]
        live = count[r]
        total = 0.0
        for j in range(live):
            total += mass[r, j]
        threshold = generator.random() * total
        chosen = live - 1
        cumulative = 0.0
        for j in range(live):
            cumulative += mass[r, j]
            if cumulative > threshold:
                chosen = j
                break
        best = -np.inf
        for a in range(K):
            theta = reward_kernels.draw(
                family, generator, first[r, chosen, a], second[r, chosen, a]
            )
            if theta > best:
                best = theta
                arms[r] = a
    return arms


@inline
def filtered_posterior(
    family: int,
    parameter: float,
    x: float,
    a: int,
    r: int,
    first: np.ndarray,
    second: np.ndarray,
    mass: np.ndarray,
    live: int,
    weight: np.ndarray,
    exponents: np.ndarray,
) -> int:
    """Run ``r``'s filtered posterior ``Q(l) ∝ P(l) p(x | pi_l(a))`` into ``weight[:live]``;
    returns the MAP (the first on ties)."""
    top = -np.inf
    for j in range(live):
        exponent, scale = reward_kernels.predictive(
            family, parameter, x, first[r, j, a], second[r, j, a]
        )
        exponents[j] = exponent
        weight[j] = mass[r, j] * scale
        if weight[j] > 0.0 and exponent > top:
            top = exponent
    total = 0.0
    for j in range(live):
        weight[j] *= np.exp(exponents[j] - top)
        total += weight[j]
    best = 0
    for j in range(live):
        weight[j] /= total
        if weight[j] > weight[best]:
            best = j
    return best


@inline
def choose_kept(
    weight: np.ndarray, live: int, best: int, room: int, min_mass: float, keep: np.ndarray
) -> None:
    """Pruning: ``keep[j]`` for the hypotheses of mass at least ``min_mass`` (and positive);
    if more than ``room``, the ``room`` most probable instead (a stable order on ties). The
    MAP ``best`` is always kept."""
    kept = 0
    for j in range(live):
        keep[j] = weight[j] >= min_mass and weight[j] > 0.0 or j == best
        kept += keep[j]
    if kept > room:
        order = np.argsort(-weight[:live], kind="mergesort")
        for j in range(live):
            keep[j] = False
        for i in range(room):
            keep[order[i]] = True
        keep[best] = True


@inline
def grow(
    t: int,
    r: int,
    family: int,
    parameter: float,
    a: int,
    x: float,
    h: float,
    prior: tuple[float, float],
    first: np.ndarray,
    second: np.ndarray,
    mass: np.ndarray,
    start: np.ndarray,
    weight: np.ndarray,
    keep: np.ndarray,
    live: int,
) -> tuple[int, float, float, float]:
    """Growth: run ``r``'s kept hypotheses move to the front, oldest first, absorb ``(a, x)``
    and get mass ``(1 - h) Q(l)`` renormalised; then, if ``h > 0``, the change point. Returns
    the hypotheses held, the mass dropped, the mass kept and its sum of run lengths."""
    _, _, K = first.shape
    dropped = kept_mass = mean_length = 0.0
    for j in range(live):
        if keep[j]:
            kept_mass += weight[j]
            mean_length += weight[j] * (t + 1 - start[r, j])
        else:
            dropped += weight[j]
    i = 0
    for j in range(live):
        if not keep[j]:
            continue
        if i != j:
            start[r, i] = start[r, j]
            for b in range(K):
                first[r, i, b] = first[r, j, b]
                second[r, i, b] = second[r, j, b]
        first[r, i, a], second[r, i, a] = reward_kernels.update(
            family, parameter, x, first[r, i, a], second[r, i, a]
        )
        mass[r, i] = (1.0 - h) * weight[j] / kept_mass
        i += 1
    if h > 0.0:
        mass[r, i] = h
        start[r, i] = t + 1
        for b in range(K):
            first[r, i, b] = prior[0]
            second[r, i, b] = prior[1]
        i += 1
    return i, dropped, kept_mass, mean_length


@jit
def bocd_update(
    t: int,
    family: int,
    parameter: float,
    actions: np.ndarray,
    rewards: np.ndarray,
    hazard: np.ndarray,
    min_mass: float,
    prior: tuple[float, float],
    first: np.ndarray,
    second: np.ndarray,
    mass: np.ndarray,
    start: np.ndarray,
    count: np.ndarray,
    record: np.ndarray,
) -> None:
    """One round of the run-length recursion for every run, in place.

    ``record[r]``: ``[0]`` detections, ``[1]`` the sum of posterior mean run lengths, ``[2]``
    the sum of hypotheses held, ``[3]`` the mass dropped, ``[4]`` the latest MAP start.
    """
    R, capacity, _ = first.shape
    weight = np.empty(capacity)
    exponents = np.empty(capacity)
    keep = np.zeros(capacity, dtype=np.bool_)
    for r in range(R):
        live = count[r]
        a = actions[r]
        x = rewards[r]
        h = hazard[r]
        best = filtered_posterior(
            family, parameter, x, a, r, first, second, mass, live, weight, exponents
        )
        room = capacity - 1 if h > 0.0 else capacity  # room for the new change point
        choose_kept(weight, live, best, room, min_mass, keep)
        if start[r, best] > record[r, 4]:
            record[r, 0] += 1.0
            record[r, 4] = start[r, best]
        count[r], dropped, kept_mass, mean_length = grow(
            t, r, family, parameter, a, x, h, prior, first, second, mass, start, weight, keep, live
        )
        record[r, 1] += mean_length / kept_mass
        record[r, 2] += count[r]
        record[r, 3] += dropped


class BOCDThompsonSampling(Agent):
    """BOCD-TS: Thompson sampling with Bayesian online change detection (Mellor & Shapiro, 2013)."""

    display_name = "BOCD-TS"
    legend_rank = 150
    style = Style("#B2DF8A", (0, (3, 1, 1, 1)), "8")

    Params = BOCDThompsonSamplingParams
    fixed_arms = True

    @classmethod
    def memory(cls, params: BOCDThompsonSamplingParams, sizes: Sizes) -> dict[str, int]:
        """Each run's hypotheses: ``8 R H (2K + 2)`` bytes."""
        capacity = min(params.max_hypotheses, sizes.horizon + 1)
        return {"agent.max_hypotheses": 8 * sizes.n_runs * capacity * (2 * sizes.n_arms + 2)}

    def __init__(
        self,
        params: BOCDThompsonSamplingParams,
        problem: Problem,
        model: OfflineModel,
        rng: BatchRNG,
    ) -> None:
        super().__init__(params, problem, model, rng)
        R, K, n = problem.n_runs, problem.n_arms, problem.horizon
        self.family, self.parameter = problem.reward_model.kernel
        self.hazard = given_or(params.hazard, np.clip(expected_changes(model, n) / n, 0.0, 1.0))
        self.min_mass = float(params.min_mass)
        capacity = int(min(params.max_hypotheses, n + 1))
        self.prior = default_prior(problem.reward_model)
        self.first = np.full((R, capacity, K), self.prior[0])
        self.second = np.full((R, capacity, K), self.prior[1])
        self.mass = np.zeros((R, capacity))
        self.mass[:, 0] = 1.0
        self.start = np.zeros((R, capacity), dtype=np.int64)
        self.count = np.ones(R, dtype=np.int64)
        self.record = np.zeros((R, 5))
        self.rounds = 0

    def act(self, t: int, contexts: np.ndarray | None) -> np.ndarray:
        return bocd_arms(
            int(self.family), self.first, self.second, self.mass, self.count, self.rng.typed()
        )

    def update(
        self, t: int, contexts: np.ndarray | None, actions: np.ndarray, rewards: np.ndarray
    ) -> None:
        bocd_update(
            t,
            int(self.family),
            float(self.parameter),
            np.asarray(actions, dtype=np.int64),
            np.asarray(rewards, dtype=float),
            self.hazard,
            self.min_mass,
            self.prior,
            self.first,
            self.second,
            self.mass,
            self.start,
            self.count,
            self.record,
        )
        self.rounds = t + 1

    def detection_counts(self) -> np.ndarray:
        return self.record[:, 0]

    def summary(self) -> dict[str, np.ndarray]:
        rounds = max(self.rounds, 1)
        return {
            "hazard": self.hazard.copy(),
            "detections": self.record[:, 0].copy(),
            "mean_run_length": self.record[:, 1] / rounds,
            "mean_hypotheses": self.record[:, 2] / rounds,
            "dropped_mass": self.record[:, 3].copy(),
        }
