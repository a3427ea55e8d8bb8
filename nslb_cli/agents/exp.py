"""Exp3.S and Exp4.S: exponential weights with fixed-share mixing (Auer et al. 2002).

Both run one algorithm over ``N`` experts, each recommending one arm per round:

* ``exp4s`` (the paper's "Exp.S", section 5): expert ``s`` is latent state ``s`` of the
  offline model and recommends ``argmax_a mu(a, X_t, s)``;
* ``exp3s``: the experts are the ``K`` arms themselves (expert ``a`` recommends arm ``a``).

Round ``t``, with weights ``w`` normalised to sum to one and ``xi_i`` expert ``i``'s arm:

    p(a)     = (1 - gamma) · sum_i w_i 1{xi_i = a}  +  gamma / K
    A_t ~ p,   x_t = reward mapped to [0, 1] (below)
    y_i      = 1{xi_i = A_t} · x_t / p(A_t)                     (importance-weighted gain)
    w_i     <- w_i · exp(gamma · y_i / K)  +  e · alpha / N     (fixed share), then normalise

which is Auer et al.'s Exp3.S update (the share term ``e alpha / N · sum_j w_j``, written for
normalised weights) and, with one-hot advice, Exp4's. ``alpha = 0`` gives Exp3 / Exp4.

Defaults (``null`` in the config): ``gamma`` and ``alpha`` from Auer et al.'s tuning for the
horizon and the expected number of changes, ``exp3s_tuning``.

Rewards are mapped to ``[0, 1]`` as ``x = clip((R_t - low) / (high - low), 0, 1)`` with
``low = min_{s,a} mu(a, X_t, s) - 2 sigma`` and ``high = max_{s,a} mu(a, X_t, s) + 2 sigma``
from the offline model's predicted means, cut to ``RewardModel.support`` (docs/design.md §4.4).
One uniform per run and round draws the arm (``categorical``).
"""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass
from typing import Any

import numpy as np

from nslb_cli.agents.base import Agent, Belief, Style
from nslb_cli.agents.round_draws import RoundDraws
from nslb_cli.agents.tuning import exp3s_tuning, given_or
from nslb_cli.bandit.problem import OfflineModel, Problem
from nslb_cli.bandit.rng import BatchRNG, categorical
from nslb_cli.common import validators as check

#: The default reward range extends the model's means by this many noise deviations.
RANGE_SIGMAS = 2.0


@dataclass
class ExpParams(check.Section):
    """Parameters shared by ``exp3s`` and ``exp4s``; ``None`` means computed (module doc)."""

    name: str = "exp4s"
    # uniform-exploration fraction and learning rate gamma/K, in (0, 1]; null: Auer et al.'s min(1,
    # sqrt(K (S ln(K n) + e) / ((e - 1) n))), S = p n expected changes, p = 1 - min_s phi(s, s) of
    # the offline model
    gamma: float | None = None
    # fixed-share rate in [0, 1] (0: plain Exp3); null: 1 / n
    alpha: float | None = None
    # reward mapped to 0; null: min of the model's means - 2 sigma
    reward_low: float | None = None
    # reward mapped to 1; null: max of the model's means + 2 sigma
    reward_high: float | None = None

    def validate(self) -> None:
        if self.gamma is not None:
            check.require(
                0.0 < self.gamma <= 1.0, "gamma", f"must be in (0, 1] or null, got {self.gamma}"
            )
        if self.alpha is not None:
            check.probability(self.alpha, "alpha")
        if self.reward_low is not None and self.reward_high is not None:
            check.require(
                self.reward_low < self.reward_high,
                "reward_high",
                f"must be > reward_low ({self.reward_low}), got {self.reward_high}",
            )


@dataclass
class Exp3SParams(ExpParams):
    name: str = "exp3s"


@dataclass
class Exp4SParams(ExpParams):
    name: str = "exp4s"


class ExponentialWeights(Agent):
    """The Exp3.S / Exp4.S core over ``n_experts`` experts; subclasses give the advice.

    A multi-armed model's advice and reward range are observed once (``observe``), a
    linear model's in each ``act``.
    """

    def __init__(
        self,
        params: ExpParams,
        problem: Problem,
        model: OfflineModel,
        rng: BatchRNG,
        n_experts: int,
    ) -> None:
        super().__init__(params, problem, model, rng)
        R, K = problem.n_runs, problem.n_arms
        gamma, alpha = exp3s_tuning(problem, model, n_experts)
        self.gamma, self.alpha = given_or(params.gamma, gamma), given_or(params.alpha, alpha)
        self.n_experts = n_experts
        self.weights = np.full((R, n_experts), 1.0 / n_experts)
        self.probabilities = np.full((R, K), 1.0 / K)
        self._keep = (1.0 - self.gamma)[:, None]  # 1 - gamma
        self._rate = self.gamma / K  # gamma / K
        self._share = (np.e * self.alpha / n_experts)[:, None]  # e alpha / N
        self._offsets = np.arange(R)[:, None] * K  # run r's arms are bins r K .. r K + K - 1
        self._uniforms = RoundDraws(rng.random)
        self._runs = np.arange(R)
        self.recommended: np.ndarray  # xi_i, (R, N): set by observe
        self.reward_range: tuple[np.ndarray | float, np.ndarray | float]  # set by observe
        if not model.linear:
            self.observe(model.expected_rewards(None))

    @abstractmethod
    def advice(self, means: np.ndarray) -> np.ndarray:
        """The arm each expert recommends in this round, ``(R, N)``, given the offline model's
        predicted means ``mu(a, X_t, s)`` ``(R, S, K)``."""

    def observe(self, means: np.ndarray) -> None:
        """The advice and the reward range (``unit_range``) for the predicted means
        ``(R, S, K)`` of this round."""
        self.recommended = self.advice(means)
        self.reward_range = self.unit_range(means)
        low, high = self.reward_range
        self._width = high - low
        self._bins = (self._offsets + self.recommended).ravel()

    def mixture(self) -> np.ndarray:
        """``sum_i w_i 1{xi_i = a}``, ``(R, K)``: each run's weights summed into the bins of
        their arms, in expert order, by one ``bincount``."""
        R, K = self.probabilities.shape
        return np.bincount(self._bins, weights=self.weights.ravel(), minlength=R * K).reshape(R, K)

    def act(self, t: int, contexts: np.ndarray | None) -> np.ndarray:
        """``A_t ~ p``, ``p(a) = (1 - gamma) sum_i w_i 1{xi_i = a} + gamma / K``."""
        if contexts is not None:
            self.observe(self.model.expected_rewards(contexts))
        self.probabilities = self._keep * self.mixture() + self._rate[:, None]
        return categorical(self.probabilities, self._uniforms.next())

    def update(
        self, t: int, contexts: np.ndarray | None, actions: np.ndarray, rewards: np.ndarray
    ) -> None:
        """``w_i <- w_i exp(gamma y_i / K) + e alpha / N``, normalised: the factor is
        ``exp(gamma / K · x_t / p(A_t))`` for the experts that recommended ``A_t`` and 1 for
        the others (``y_i = 0``)."""
        gain = self.unit_rewards(rewards) / self.probabilities[self._runs, actions]
        boost = np.exp(self._rate * gain)[:, None]
        chosen = self.recommended == actions[:, None]
        weights = self.weights * np.where(chosen, boost, 1.0) + self._share
        self.weights = weights / weights.sum(axis=1, keepdims=True)

    def unit_range(self, means: np.ndarray) -> tuple[np.ndarray | float, np.ndarray | float]:
        """``(low, high)`` of this round's map to ``[0, 1]`` (module docstring), each ``(R,)``
        or a configured number, from the predicted means ``(R, S, K)``."""
        margin = RANGE_SIGMAS * self.problem.sigma
        floor, ceiling = self.problem.reward_model.support
        p = self.params
        if p.reward_low is None:
            low = np.maximum(means.min(axis=(1, 2)) - margin, floor)
        else:
            low = p.reward_low
        if p.reward_high is None:
            high = np.minimum(means.max(axis=(1, 2)) + margin, ceiling)
        else:
            high = p.reward_high
        return low, high

    def unit_rewards(self, rewards: np.ndarray) -> np.ndarray:
        """Rewards mapped to ``[0, 1]`` by this round's ``unit_range``, ``(R,)``."""
        low = self.reward_range[0]
        return np.minimum(np.maximum((rewards - low) / self._width, 0.0), 1.0)

    def summary(self) -> dict[str, np.ndarray]:
        return {"gamma": self.gamma, "alpha": self.alpha}

    @classmethod
    def notes(cls, params: Any, summary: dict[str, np.ndarray], env: Any) -> list[str]:
        if params.gamma is None and (np.asarray(summary["gamma"]) >= 1.0).all():
            return [
                f"{params.name}'s default gamma is 1 here (Auer et al.'s tuning for this horizon "
                "and number of changes): it plays uniformly at random; set agent.gamma below 1"
            ]
        return []


class Exp3S(ExponentialWeights):
    """Exp3.S: exponential weights with fixed share over the arms (Auer et al., 2002).

    Expert ``a`` always recommends arm ``a``."""

    display_name = "Exp3.S"
    legend_rank = 50
    style = Style("#882255", ":", "D")

    Params = Exp3SParams
    fixed_arms = True

    def __init__(
        self, params: Exp3SParams, problem: Problem, model: OfflineModel, rng: BatchRNG
    ) -> None:
        super().__init__(params, problem, model, rng, n_experts=problem.n_arms)

    def advice(self, means: np.ndarray) -> np.ndarray:
        R, _, K = means.shape
        return np.broadcast_to(np.arange(K), (R, K))

    def mixture(self) -> np.ndarray:
        """The weights themselves: expert ``a`` is arm ``a``."""
        return self.weights


class Exp4S(ExponentialWeights):
    """Exp4.S: exponential weights with fixed share over the latent states as experts
    (Auer et al., 2002; the paper's "Exp.S").

    Its belief is the expert weights read as a distribution over latent states: ``state``
    is the heaviest expert, ``posterior`` the weights that chose this round's arm.
    """

    display_name = "Exp4.S"
    legend_rank = 60
    style = Style("#E69F00", ":", "D")

    Params = Exp4SParams
    latent_model = "discrete"

    def __init__(
        self, params: Exp4SParams, problem: Problem, model: OfflineModel, rng: BatchRNG
    ) -> None:
        super().__init__(params, problem, model, rng, n_experts=problem.n_states)

    def advice(self, means: np.ndarray) -> np.ndarray:
        return means.argmax(axis=2)

    def belief(self) -> Belief | None:
        return Belief(state=self.weights.argmax(axis=1), posterior=self.weights)
