"""The Kalman oracle: the exact Kalman filter of the latent AR process, given the true
parameters (Trella et al., RLC 2025, their upper reference; docs/design.md §4.9).

It is told the environment's true AR model through the offline model (``OfflineModel.ar_*``:
``gamma``, ``mu``, ``beta``, ``sigma_z``, the initial values' spread; ``sigma_r`` is the
problem's ``sigma``), never the latent path itself: it must infer ``z_t`` from its own
rewards. The state is ``x = (z_j, z_{j-1}, …, z_{j-k+1})`` with mean ``m`` and covariance
``P``, starting from ``z_0 … z_{k-1}`` independent ``N(0, initial_sd^2)`` (``j = k - 1``).

* Rounds ``t < k``: the latent holds its initial values, ``z_t`` is coordinate ``c = k - 1 - t``.
* Rounds ``t >= k`` first predict: ``m <- F m``, ``P <- F P F' + sigma_z^2 e_0 e_0'`` with ``F``
  the companion matrix (first row ``gamma``, then the shift); ``z_t`` is coordinate ``c = 0``.

Act greedily on the predicted means: ``A_t = argmax_a mu_a + beta_a m_c`` (lowest arm on
ties). Then ``R_t`` observes ``z_t`` through the pulled arm: with ``h = beta_{A_t} e_c``,
``S = beta^2 P_cc + sigma_r^2``, ``g = beta P e_c / S``:

    m <- m + g (R_t - mu_{A_t} - beta m_c),     P <- P - beta g (P e_c)'

It draws no random numbers and has no belief over discrete states.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nslb_cli.agents.base import Agent
from nslb_cli.bandit.problem import OfflineModel, Problem
from nslb_cli.bandit.rng import BatchRNG
from nslb_cli.common import validators as check
from nslb_cli.common.errors import ConfigError


@dataclass
class KalmanOracleParams(check.Section):
    name: str = "kalman_oracle"


class KalmanOracle(Agent):
    """Kalman oracle: the exact Kalman filter of the latent AR process, with its true
    parameters (module docstring)."""

    display_name = "Kalman oracle"
    legend_rank = 220

    Params = KalmanOracleParams
    fixed_arms = True
    latent_model = "autoregressive"

    def __init__(
        self, params: KalmanOracleParams, problem: Problem, model: OfflineModel, rng: BatchRNG
    ) -> None:
        super().__init__(params, problem, model, rng)
        if (
            model.ar_coefficients is None
            or model.ar_loadings is None
            or model.ar_noise_sd is None
            or model.ar_initial_sd is None
        ):
            raise ConfigError("agent", "kalman_oracle needs an AR latent model: env=latent_ar")
        self.gamma = model.ar_coefficients  # (R, k)
        self.mu = model.means[:, 0, :]  # (R, K)
        self.beta = model.ar_loadings
        self.noise = model.ar_noise_sd**2
        k = self.gamma.shape[1]
        self.mean = np.zeros((problem.n_runs, k))
        self.cov = np.zeros((problem.n_runs, k, k))
        self.cov[:, np.arange(k), np.arange(k)] = (model.ar_initial_sd**2)[:, None]
        self.coordinate = 0
        self._runs = np.arange(problem.n_runs)

    def predict(self) -> None:
        """One step of the AR process: ``m <- F m``, ``P <- F P F' + sigma_z^2 e_0 e_0'``."""
        g = self.gamma
        self.mean = np.concatenate(
            [(g * self.mean).sum(axis=1, keepdims=True), self.mean[:, :-1]], axis=1
        )
        rows = np.concatenate(  # F P
            [(g[:, :, None] * self.cov).sum(axis=1, keepdims=True), self.cov[:, :-1, :]], axis=1
        )
        self.cov = np.concatenate(  # (F P) F'
            [(g[:, None, :] * rows).sum(axis=2, keepdims=True), rows[:, :, :-1]], axis=2
        )
        self.cov[:, 0, 0] += self.noise

    def act(self, t: int, contexts: np.ndarray | None) -> np.ndarray:
        k = self.gamma.shape[1]
        if t >= k:
            self.predict()
        self.coordinate = k - 1 - t if t < k else 0
        latent = self.mean[:, self.coordinate]
        return (self.mu + self.beta * latent[:, None]).argmax(axis=1)

    def update(
        self, t: int, contexts: np.ndarray | None, actions: np.ndarray, rewards: np.ndarray
    ) -> None:
        c, runs = self.coordinate, self._runs
        beta, mu = self.beta[runs, actions], self.mu[runs, actions]
        column = self.cov[:, :, c].copy()  # P e_c
        spread = beta * beta * column[:, c] + self.problem.sigma**2
        gain = (beta / spread)[:, None] * column
        self.mean = self.mean + gain * (rewards - mu - beta * self.mean[:, c])[:, None]
        self.cov = self.cov - beta[:, None, None] * gain[:, :, None] * column[:, None, :]
