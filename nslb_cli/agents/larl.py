"""LARL, LARL-ETC and AR-UCB: LinUCB with one ridge regression per arm on features made of
the last rewards (Trella, Dempsey, Doshi-Velez & Murphy, RLC 2025; docs/design.md §4.9).

In round ``t`` an agent with ``s`` lags forms, from rounds ``t - s … t - 1`` (oldest first),

* ``larl``: ``x_t = [R_{t-s} e_{A_{t-s}}, …, R_{t-1} e_{A_{t-1}}, e_{A_{t-s}}, …, e_{A_{t-1}}, 1]``,
  ``2 s K + 1`` coordinates (``e_a`` the one-hot of arm ``a``): each past reward times the
  one-hot of the arm it came from, the one-hots of the past actions, a constant;
* ``ar_ucb`` (Bacchiocchi et al. 2024, as the LARL paper runs it): ``x_t = [R_{t-s} … R_{t-1}]``,
  ``s = k`` (the AR order) by default;

and plays, with ``V_a = lambda I + sum_{i: A_i = a} x_i x_i'`` and
``b_a = sum_{i: A_i = a} R_i x_i`` over the rounds since ``s``:

    theta_a = V_a^-1 b_a,    A_t = argmax_a theta_a' x_t + alpha sqrt(x_t' V_a^-1 x_t)

(ties to the lowest arm), ``lambda = ridge = 1``, ``alpha = 1`` (the paper's defaults). The
first ``s`` rounds, which have no features yet, play a uniform arm from the agent's stream.

``larl_etc`` explores, then commits to a number of lags: it plays the arms in turn
(``t mod K``) for ``explore = floor(T / 5)`` rounds; then for every ``s = 1 … max_s``
(``max_s = 15``) it fits the per-arm ridge regressions on the exploration rounds ``t >= s``
and computes ``BIC(s) = n log(RSS / n) + (2 s K + 1) log n`` (``n = explore - s`` rows),
keeps the ``s`` with the lowest BIC (the lowest among ties) and its fitted regressions, and
runs LARL with them; the chosen ``s`` is reported per seed (``lags``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from nslb_cli.agents.base import Agent
from nslb_cli.bandit.problem import FLOAT, OfflineModel, Problem, Sizes
from nslb_cli.bandit.rng import BatchRNG
from nslb_cli.common import validators as check
from nslb_cli.common.errors import ConfigError


def _check(alpha: float, ridge: float) -> None:
    check.non_negative(alpha, "alpha")
    check.positive(ridge, "ridge")


def _check_lags(value: int, key: str, least: int) -> None:
    check.require(value >= least, key, f"must be >= {least}, got {value}")


@dataclass
class LARLParams(check.Section):
    """``larl``'s parameters (module docstring); ``s = 0`` is the stationary UCB (a constant
    feature only)."""

    name: str = "larl"
    # lags (0: a constant feature only, the stationary UCB of the paper)
    s: int = 5
    # LinUCB's exploration weight (the paper's 1)
    alpha: float = 1.0
    # lambda, the ridge penalty (the paper's 1)
    ridge: float = 1.0

    def validate(self) -> None:
        _check_lags(self.s, "s", 0)
        _check(self.alpha, self.ridge)


@dataclass
class ARUCBParams(check.Section):
    """``ar_ucb``'s parameters; ``s = None``: the AR order of the environment's model."""

    name: str = "ar_ucb"
    # lags; null: the AR order k of env=latent_ar (the paper's s = k)
    s: int | None = None
    # LinUCB's exploration weight (the paper's 1)
    alpha: float = 1.0
    # lambda, the ridge penalty (the paper's 1)
    ridge: float = 1.0

    def validate(self) -> None:
        if self.s is not None:
            _check_lags(self.s, "s", 1)
        _check(self.alpha, self.ridge)


@dataclass
class LARLETCParams(check.Section):
    """``larl_etc``'s parameters; ``explore = None``: ``floor(T / 5)`` rounds."""

    name: str = "larl_etc"
    # the largest number of lags considered (the paper's 15)
    max_s: int = 15
    # rounds of round-robin exploration; null: floor(T / 5), the paper's
    explore: int | None = None
    # LinUCB's exploration weight (the paper's 1)
    alpha: float = 1.0
    # lambda, the ridge penalty (the paper's 1)
    ridge: float = 1.0

    def validate(self) -> None:
        _check_lags(self.max_s, "max_s", 1)
        if self.explore is not None:
            check.non_negative(self.explore, "explore")
        _check(self.alpha, self.ridge)


def dimension(lags: np.ndarray | int, n_arms: int, with_actions: bool) -> Any:
    """The number of features with ``lags`` lags: ``2 s K + 1`` (LARL) or ``s`` (AR-UCB)."""
    return 2 * np.asarray(lags) * n_arms + 1 if with_actions else np.asarray(lags)


class RidgeUCB(Agent):
    """LinUCB with a ridge regression per arm on features of the last rounds (module
    docstring); ``lags`` per run, at most ``max_lags``."""

    fixed_arms = True
    with_actions: ClassVar[bool] = True

    @classmethod
    def lag_memory(cls, key: str, lags: int, sizes: Sizes) -> dict[str, int]:
        """``V_a^-1``, ``theta_a`` per run and arm: ``8 R K (d^2 + d)`` bytes keyed ``key``."""
        d = int(dimension(lags, sizes.n_arms, cls.with_actions))
        return {key: sizes.n_runs * sizes.n_arms * (d * d + d) * FLOAT}

    def setup(self, lags: np.ndarray, max_lags: int) -> None:
        """Empty regressions (``V_a = lambda I``) for ``lags`` lags per run."""
        R, K = self.problem.n_runs, self.problem.n_arms
        d = int(dimension(max_lags, K, self.with_actions))
        self.lags = lags.astype(np.int64)
        self.dims = dimension(self.lags, K, self.with_actions).astype(np.int64)
        self.inverse = np.zeros((R, K, d, d))
        self.inverse[..., np.arange(d), np.arange(d)] = 1.0 / self.params.ridge
        self.theta = np.zeros((R, K, d))
        self.x = np.zeros((R, d))
        self.spread = np.zeros((R, d))
        self.past_rewards = np.zeros((R, max(max_lags, 1)))
        self.past_actions = np.zeros((R, max(max_lags, 1)), dtype=np.int64)

    def ucb(self) -> np.ndarray:
        """LinUCB's arms on this round's features (built from the remembered rounds)."""
        from nslb_cli.agents import larl_kernels  # numba: loaded on use

        larl_kernels.features(
            self.past_rewards, self.past_actions, self.lags, self.problem.n_arms,
            self.with_actions, self.x,
        )  # fmt: skip
        return larl_kernels.ucb_arms(
            self.x, self.inverse, self.theta, self.dims, float(self.params.alpha), self.spread
        )

    def learn(self, actions: np.ndarray, rewards: np.ndarray) -> None:
        """Add this round's ``(x_t, R_t)`` to the pulled arm's regression (after ``ucb``)."""
        from nslb_cli.agents import larl_kernels

        larl_kernels.update(
            self.x, self.inverse, self.theta, self.dims, actions, rewards, self.spread
        )

    def remember(self, actions: np.ndarray, rewards: np.ndarray) -> None:
        """Shift this round into the window of the last rounds."""
        self.past_rewards[:, :-1] = self.past_rewards[:, 1:]
        self.past_actions[:, :-1] = self.past_actions[:, 1:]
        self.past_rewards[:, -1] = rewards
        self.past_actions[:, -1] = actions

    def summary(self) -> dict[str, np.ndarray]:
        return {"lags": self.lags.copy()}


class _Lagged(RidgeUCB):
    """LARL or AR-UCB with the same ``s`` for every run: uniform play until round ``s``."""

    s: int

    def act(self, t: int, contexts: np.ndarray | None) -> np.ndarray:
        if t < self.s:
            return self.rng.integers(self.problem.n_arms)
        return self.ucb()

    def update(
        self, t: int, contexts: np.ndarray | None, actions: np.ndarray, rewards: np.ndarray
    ) -> None:
        if t >= self.s:
            self.learn(actions, rewards)
        self.remember(actions, rewards)


class LARL(_Lagged):
    """LARL (Trella et al., 2025): LinUCB per arm on the last s rewards and actions."""

    display_name = "LARL"
    legend_rank = 200

    Params = LARLParams

    @classmethod
    def memory(cls, params: Any, sizes: Sizes) -> dict[str, int]:
        return cls.lag_memory("agent.s, env.n_arms", params.s, sizes)

    def __init__(
        self, params: LARLParams, problem: Problem, model: OfflineModel, rng: BatchRNG
    ) -> None:
        super().__init__(params, problem, model, rng)
        self.s = params.s
        self.setup(np.full(problem.n_runs, params.s), params.s)


class ARUCB(_Lagged):
    """AR-UCB (Bacchiocchi et al., 2024): LinUCB per arm on the last s rewards (module
    docstring)."""

    display_name = "AR-UCB"
    legend_rank = 160

    Params = ARUCBParams
    with_actions = False

    @classmethod
    def memory(cls, params: Any, sizes: Sizes) -> dict[str, int]:
        return cls.lag_memory("agent.s, env.n_arms", params.s or 1, sizes)

    def __init__(
        self, params: ARUCBParams, problem: Problem, model: OfflineModel, rng: BatchRNG
    ) -> None:
        super().__init__(params, problem, model, rng)
        if params.s is not None:
            self.s = params.s
        elif model.ar_coefficients is not None:
            self.s = model.ar_coefficients.shape[1]
        else:
            raise ConfigError("agent.s", "null is the AR order of env=latent_ar; give a value")
        self.setup(np.full(problem.n_runs, self.s), self.s)


class LARLETC(RidgeUCB):
    """LARL-ETC (Trella et al., 2025): round-robin exploration, ``s`` by BIC, then LARL
    (module docstring)."""

    display_name = "LARL-ETC"
    legend_rank = 210

    Params = LARLETCParams

    @classmethod
    def memory(cls, params: Any, sizes: Sizes) -> dict[str, int]:
        return cls.lag_memory("agent.max_s, env.n_arms", params.max_s, sizes)

    def __init__(
        self, params: LARLETCParams, problem: Problem, model: OfflineModel, rng: BatchRNG
    ) -> None:
        super().__init__(params, problem, model, rng)
        self.explore = problem.horizon // 5 if params.explore is None else params.explore
        self.setup(np.full(problem.n_runs, params.max_s), params.max_s)
        self.explored = np.zeros((problem.n_runs, min(self.explore, problem.horizon)))
        self.explored_arms = np.zeros(self.explored.shape, dtype=np.int64)

    def act(self, t: int, contexts: np.ndarray | None) -> np.ndarray:
        if t < self.explore:
            return np.full(self.problem.n_runs, t % self.problem.n_arms, dtype=np.int64)
        return self.ucb()

    def update(
        self, t: int, contexts: np.ndarray | None, actions: np.ndarray, rewards: np.ndarray
    ) -> None:
        if t < self.explore:
            self.explored[:, t], self.explored_arms[:, t] = rewards, actions
            if t == self.explore - 1:
                self.commit()
        else:
            self.learn(actions, rewards)
        self.remember(actions, rewards)

    def commit(self) -> None:
        """Choose each run's ``s`` by BIC on the exploration rounds and load its fit."""
        K, ridge = self.problem.n_arms, self.params.ridge
        for r in range(self.problem.n_runs):
            s, inverse, theta = select_lags(
                self.explored[r], self.explored_arms[r], self.params.max_s, K, ridge
            )
            d = inverse.shape[-1]
            self.lags[r], self.dims[r] = s, d
            self.inverse[r, :, :d, :d], self.theta[r, :, :d] = inverse, theta


def design(rewards: np.ndarray, actions: np.ndarray, s: int, n_arms: int) -> np.ndarray:
    """LARL's features of rounds ``s … len(rewards) - 1`` of one run, ``(n - s, 2 s K + 1)``."""
    n = len(rewards)
    rows = np.arange(n - s)
    past = rows[:, None] + np.arange(s)  # rounds t - s … t - 1 of row t - s
    x = np.zeros((n - s, 2 * s * n_arms + 1))
    for i in range(s):
        x[rows, i * n_arms + actions[past[:, i]]] = rewards[past[:, i]]
        x[rows, (s + i) * n_arms + actions[past[:, i]]] = 1.0
    x[:, -1] = 1.0
    return x


def ridge_fits(
    x: np.ndarray, y: np.ndarray, arms: np.ndarray, n_arms: int, ridge: float
) -> tuple[np.ndarray, np.ndarray]:
    """Per arm, ``V_a^-1`` and ``theta_a = V_a^-1 b_a`` on the rows that pulled arm ``a``."""
    grams, theta = _solved(x, y, arms, n_arms, ridge)
    return np.linalg.inv(grams), theta


def _solved(
    x: np.ndarray, y: np.ndarray, arms: np.ndarray, n_arms: int, ridge: float
) -> tuple[np.ndarray, np.ndarray]:
    """Per arm, ``V_a = lambda I + X_a' X_a`` and the solution ``theta_a`` of
    ``V_a theta_a = X_a' y_a``."""
    d = x.shape[1]
    grams, moments = np.empty((n_arms, d, d)), np.empty((n_arms, d, 1))
    for a in range(n_arms):
        rows = x[arms == a]
        grams[a] = ridge * np.eye(d) + rows.T @ rows
        moments[a, :, 0] = rows.T @ y[arms == a]
    return grams, np.linalg.solve(grams, moments)[:, :, 0]


def select_lags(
    rewards: np.ndarray, actions: np.ndarray, max_s: int, n_arms: int, ridge: float
) -> tuple[int, np.ndarray, np.ndarray]:
    """LARL-ETC's choice on one run's exploration rounds: the ``s`` of lowest BIC and its
    per-arm fit ``(V^-1, theta)``; with fewer than two rows for every ``s``, ``s = 1`` unfit."""
    best: tuple[float, int, np.ndarray, np.ndarray] | None = None
    for s in range(1, max_s + 1):
        n = len(rewards) - s
        if n < 2:
            break
        x = design(rewards, actions, s, n_arms)
        grams, theta = _solved(x, rewards[s:], actions[s:], n_arms, ridge)
        residuals = rewards[s:] - (theta[actions[s:]] * x).sum(axis=1)
        rss = max(float(np.mean(residuals**2)), np.finfo(float).tiny)
        bic = n * np.log(rss) + x.shape[1] * np.log(n)
        if best is None or bic < best[0]:
            best = (bic, s, grams, theta)
    if best is None:
        d = 2 * n_arms + 1
        return 1, np.broadcast_to(np.eye(d) / ridge, (n_arms, d, d)).copy(), np.zeros((n_arms, d))
    return best[1], np.linalg.inv(best[2]), best[3]
