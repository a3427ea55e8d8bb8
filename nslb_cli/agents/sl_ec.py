"""SL-EC: explore, estimate the transitions, commit (Russo, Metelli & Restelli, TMLR 2024;
docs/design.md §4.10).

SL-EC knows the observation model ``O[s, a, ·]`` and the outcome rewards ``r``; it does not
know the transition matrix ``P``. For ``T0`` rounds it plays pairs of arms back to back, each
ordered pair ``(a1, a2)`` of the explored arms in turn, and counts the outcomes
``(a1, a2, o1, o2)`` of each pair. Under the chain's stationary law ``rho`` the pair's law is

    p(o1, o2 | a1, a2) = sum_{s, s'} O[s, a1, o1] O[s', a2, o2] W(s, s'),   W = diag(rho) P

so ``W`` is the least-squares solution of ``A w = f`` with ``A[(a1 a2 o1 o2), (s s')] =
O[s, a1, o1] O[s', a2, o2]`` and ``f`` the empirical law of the outcomes given each pair.
``P̂`` is ``W`` with negative entries set to 0 and rows normalised. The filter
``b_{t+1}(s') ∝ sum_s b_t(s) O[s, A_t, o_t] P̂(s, s')`` is then replayed over the exploration
rounds and carried on, and each later round plays ``argmax_a sum_s b_t(s) mu(a, s)`` with
``mu(a, s) = sum_o O[s, a, o] r[o]``.

``T0`` (``exploration: null``) follows the paper's rule, as the authors compute it:
``T0 = (n c / 10)^(2/3)`` with ``c = 2 K^2 sqrt(S (1 + log(K^2 / delta))) /
(sigma_min(A) rho_min sqrt(1 - lambda_2^(K^2)))``, ``rho_min`` the smallest entry of the
stationary law and ``lambda_2`` the second largest eigenvalue of ``P`` (the constants the
paper assumes known, read from the offline model's point estimate), rounded up to whole
sweeps of the ``2 K'^2`` rounds of the pairs and capped at the horizon. With ``arms = K'``
below ``K``, the arm-subset step explores the ``K'`` arms whose matrix minimises
``K'^2 sqrt(log(2 K'^2 N^2)) / sigma_min(A_C)``, if that beats all ``K`` arms.

Per run, ``seed=K.json`` records ``exploration`` (``T0``), ``explored_arms`` (how many arms
the exploration plays) and ``transition_error`` (``||P̂ - P||_1``, the sum of the absolute
differences of all entries, of the estimate at the end of exploration: at the end of the
run when exploration lasts the whole run).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from typing import Any

import numpy as np

from nslb_cli.agents.base import Agent, Belief
from nslb_cli.agents.mts import filter_step
from nslb_cli.bandit.problem import FLOAT, OfflineModel, Problem, Sizes
from nslb_cli.bandit.rewards import SMALLEST_PROBABILITY, Categorical
from nslb_cli.bandit.rng import BatchRNG
from nslb_cli.common import validators as check
from nslb_cli.compiled.jit import jit


@dataclass
class SLECParams(check.Section):
    name: str = "sl_ec"
    # T0, rounds of exploration; null: the paper's rule from n, delta and the problem
    exploration: int | None = None
    # the confidence of the T0 rule
    delta: float = 0.1
    # explore the best-conditioned subset of this many arms; null: every arm
    arms: int | None = None

    def validate(self) -> None:
        if self.exploration is not None:
            check.positive(self.exploration, "exploration")
        check.require(0 < self.delta < 1, "delta", f"must lie in (0, 1), got {self.delta}")
        if self.arms is not None:
            check.positive(self.arms, "arms")


def pair_matrix(laws: np.ndarray) -> np.ndarray:
    """``A[(a1 a2 o1 o2), (s s')] = O[s, a1, o1] O[s', a2, o2]`` for laws ``(S, K, N)``."""
    S, K, N = laws.shape
    return np.einsum("sao,tbp->abopst", laws, laws).reshape(K * K * N * N, S * S)


def smallest_singular_value(matrix: np.ndarray) -> float:
    return float(np.linalg.svd(matrix, compute_uv=False).min())


def explored_arms(laws: np.ndarray, size: int | None) -> np.ndarray:
    """The arm-subset step (module docstring): the arms to explore, in increasing order."""
    S, K, N = laws.shape
    everything = np.arange(K)
    if size is None or size >= K or size * size * N * N < S * S:
        return everything

    def value(arms: np.ndarray) -> float:
        k = len(arms)
        return (
            k
            * k
            * np.sqrt(np.log(2 * k * k * N * N))
            / smallest_singular_value(pair_matrix(laws[:, arms]))
        )

    subsets = [np.array(c) for c in combinations(range(K), size)]
    best = min(subsets, key=value)
    return best if value(best) < value(everything) else everything


def exploration_rule(laws: np.ndarray, P: np.ndarray, horizon: int, delta: float) -> float:
    """The paper's ``T0`` before rounding (module docstring), from the full matrix ``A``."""
    S, K, _ = laws.shape
    values, vectors = np.linalg.eig(P.T)
    one = np.argmin(np.abs(values - 1))
    stationary = np.real(vectors[:, one] / vectors[:, one].sum())
    rest = np.real(np.delete(values, one))
    second = float(rest.max()) if len(rest) else 0.0
    sigma = smallest_singular_value(pair_matrix(laws))
    root = np.sqrt(S * (1 + np.log(K * K / delta))) / np.sqrt(1 - second ** (K * K))
    constant = 2 * K * K / (sigma * stationary.min()) * root
    return float((horizon * constant / 10) ** (2 / 3))


def estimate_transitions(
    laws: np.ndarray, arms: np.ndarray, actions: np.ndarray, outcomes: np.ndarray
) -> np.ndarray:
    """``P̂`` from the exploration's pairs of rounds ``(2k, 2k + 1)`` (module docstring)."""
    S, K, N = laws.shape
    position = np.zeros(K, dtype=np.int64)
    position[arms] = np.arange(len(arms))
    pairs = len(actions) // 2
    first, second = slice(0, 2 * pairs, 2), slice(1, 2 * pairs, 2)
    counts = np.zeros((len(arms), len(arms), N, N))
    index = (position[actions[first]], position[actions[second]], outcomes[first], outcomes[second])
    np.add.at(counts, index, 1.0)
    frequencies = counts / np.maximum(counts.sum(axis=(2, 3), keepdims=True), 1.0)
    joint = np.linalg.lstsq(pair_matrix(laws[:, arms]), frequencies.ravel(), rcond=None)[0]
    clipped = np.maximum(joint.reshape(S, S), 0.0)
    totals = clipped.sum(axis=1, keepdims=True)
    return np.where(totals > 0, clipped / np.where(totals > 0, totals, 1.0), 1.0 / S)


@jit
def _replay(
    transitions: np.ndarray, laws: np.ndarray, actions: np.ndarray, outcomes: np.ndarray
) -> np.ndarray:
    """The filter from a uniform belief over the exploration rounds, with ``P̂``: ``(S,)``."""
    S = transitions.shape[0]
    belief = np.full(S, 1.0 / S)
    for t in range(actions.shape[0]):
        total = 0.0
        for s in range(S):
            belief[s] *= max(laws[s, actions[t], outcomes[t]], SMALLEST_PROBABILITY)
            total += belief[s]
        after = np.zeros(S)
        for s in range(S):
            weight = belief[s] / total
            for u in range(S):
                after[u] += weight * transitions[s, u]
        belief = after
    return belief


class SwitchingLatentExploreCommit(Agent):
    """SL-EC (Russo, Metelli & Restelli, 2024): explore with pairs of arms, estimate ``P`` by
    least squares, commit to the filter's greedy arm. See the module docstring."""

    display_name = "SL-EC"
    Params = SLECParams
    needs_outcome_laws = True  # refused where the environment does not declare outcome_laws

    @classmethod
    def memory(cls, params: Any, sizes: Sizes) -> dict[str, int]:
        """The default statistics, and the exploration's arms and outcomes: ``16 R n``."""
        return super().memory(params, sizes) | {
            "env.horizon": 2 * sizes.n_runs * sizes.horizon * FLOAT
        }

    def __init__(
        self, params: SLECParams, problem: Problem, model: OfflineModel, rng: BatchRNG
    ) -> None:
        super().__init__(params, problem, model, rng)
        if model.emissions is None or not isinstance(problem.reward_model, Categorical):
            raise ValueError(
                "sl_ec needs known outcome laws: use env=switching_latent or env=movielens_genres"
            )
        self.outcomes = problem.reward_model
        R, n = problem.n_runs, problem.horizon
        laws = model.emissions
        self.arms = [explored_arms(laws[r], params.arms) for r in range(R)]
        sweep = 2 * len(self.arms[0]) ** 2
        wanted = [
            params.exploration or exploration_rule(laws[r], model.transitions[r], n, params.delta)
            for r in range(R)
        ]
        self.exploration = np.array([min(n, int(np.ceil(w / sweep)) * sweep) for w in wanted])
        # the pairs (a1, a2) of explored arms in turn, each played as two rounds a1, a2
        self.schedule = np.stack(
            [
                np.stack([np.repeat(a, len(a)), np.tile(a, len(a))], axis=1).ravel()
                for a in self.arms
            ]
        )
        self.history = np.zeros((2, R, n), dtype=np.int64)  # the exploration's arms, outcomes
        self.estimate = np.full((R, problem.n_states, problem.n_states), np.nan)
        self._belief = np.full((problem.n_states, R), 1.0 / problem.n_states)  # (S, R)
        self._runs = np.arange(R)

    def _commit(self, runs: np.ndarray) -> None:
        """Estimate ``P̂`` for ``runs`` and replay their filter over their exploration."""
        laws = self.model.emissions
        assert laws is not None
        for r in runs:
            T0 = self.exploration[r]
            actions, outcomes = self.history[0, r, :T0], self.history[1, r, :T0]
            self.estimate[r] = estimate_transitions(laws[r], self.arms[r], actions, outcomes)
            self._belief[:, r] = _replay(self.estimate[r], laws[r], actions, outcomes)

    def act(self, t: int, contexts: np.ndarray | None) -> np.ndarray:
        starting = np.flatnonzero(self.exploration == t)
        if len(starting):
            self._commit(starting)
        explore = self.schedule[:, t % self.schedule.shape[1]]
        values = (self._belief.T[:, :, None] * self.model.means).sum(axis=1)  # (R, K)
        return np.where(t < self.exploration, explore, values.argmax(axis=1))

    def update(
        self, t: int, contexts: np.ndarray | None, actions: np.ndarray, rewards: np.ndarray
    ) -> None:
        outcomes = self.outcomes.outcome(rewards)
        exploring = t < self.exploration
        self.history[:, exploring, t] = actions[exploring], outcomes[exploring]
        if exploring.all():
            return
        laws = self.model.emissions
        assert laws is not None
        log_lik = np.log(np.maximum(laws[self._runs, :, actions, outcomes], SMALLEST_PROBABILITY)).T
        estimate = np.nan_to_num(self.estimate, nan=1.0 / self.problem.n_states).transpose(1, 2, 0)
        after = filter_step(self._belief, log_lik, np.ascontiguousarray(estimate))
        self._belief = np.where(exploring, self._belief, after)

    def belief(self) -> Belief | None:
        posterior = np.ascontiguousarray(self._belief.T)
        return Belief(state=posterior.argmax(axis=1), posterior=posterior)

    @classmethod
    def notes(cls, params: Any, summary: dict[str, np.ndarray], env: Any) -> list[str]:
        if (np.asarray(summary["exploration"]) >= env.horizon).all():
            rule = "its exploration rule" if params.exploration is None else "agent.exploration"
            return [
                f"sl_ec explores for the whole run: {rule} gives T0 >= env.horizon, so it never "
                "commits; lower agent.exploration or lengthen env.horizon"
            ]
        return []

    def summary(self) -> dict[str, np.ndarray]:
        self._commit(np.flatnonzero(self.exploration == self.problem.horizon))  # explored only
        error = np.abs(self.estimate - self.model.transitions).sum(axis=(1, 2))
        arms = np.array([len(a) for a in self.arms], dtype=np.int64)
        return {"exploration": self.exploration, "explored_arms": arms, "transition_error": error}
