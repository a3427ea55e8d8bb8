"""CD-LinUCB and CD-LinTS: ridge-regression bandits restarted by the linear detector (5.2).

Per run, since its last restart, the ridge statistics of the pulled arms' features
``x_i = X_i[A_i]`` and rewards ``y_i`` (docs/design.md §4.6):

    A = lambda I + sum_i x_i x_i',   b = sum_i x_i y_i,   theta_hat = A^-1 b

(``lambda`` = ``ridge``), and a ``LinearShiftDetector`` on its
last ``tau`` rounds. After observing ``R_t``, if the detector fires the run restarts: ``A``,
``b`` and the detector's window are cleared.

The agent keeps ``A^-1`` (``inverse``), updated by the Sherman–Morrison step:

    u = A^-1 x_t,   A^-1 <- A^-1 - u u' / (1 + x_t' u)

in compiled per-run loops (``nslb_cli.agents.linear_kernels``), with no BLAS.

Base algorithms, with ``X_t[a]`` the features of arm ``a``:

* ``cd_linucb``: LinUCB, ``A_t = argmax_a X_t[a]' theta_hat + alpha sqrt(X_t[a]' A^-1 X_t[a])``
  (ties: lowest index).
* ``cd_lints``: linear Gaussian Thompson sampling, ``theta ~ N(theta_hat, v^2 A^-1)``,
  ``A_t = argmax_a X_t[a]' theta``; drawn as ``theta_hat + v L z``, ``z ~ N(0, I_d)`` from the
  agent's stream, ``L`` the Cholesky factor of ``A^-1`` (plus a relative jitter of ``1e-12``).

Defaults: ``alpha = v = sigma`` (``null``; the exact posterior ``N(theta_hat, sigma^2 A^-1)``
under the prior ``N(0, sigma^2 / lambda I)``), ``lambda = 1``, and the paper's tuned detector
``tau = 100``, ``threshold = 13`` (section 5.2). Without context the features are one-hot.
"""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass

import numpy as np

from nslb_cli.agents.base import Style
from nslb_cli.agents.detectors import LinearShiftDetector
from nslb_cli.agents.restarting import Restarting
from nslb_cli.agents.round_draws import RoundDraws
from nslb_cli.bandit.problem import OfflineModel, Problem
from nslb_cli.bandit.rng import BatchRNG
from nslb_cli.common import validators as check

JITTER = 1e-12  # relative diagonal jitter before the Cholesky factor of A^-1
MIN_RIDGE = 1e-6
"""Smallest ``ridge`` (``lambda``). ``A^-1`` starts at ``I / lambda`` and Sherman–Morrison
subtracts ``u u' / (1 + x' u)`` with ``u = x / lambda``, whose square overflows from
``lambda`` of about 1e-154 (``ridge=1e-300``: ``A^-1`` turns NaN and the agent plays arm 0
forever). 1e-6 is already plain least squares, with every product finite for features of
up to 1e3 (MovieLens vectors of ratings at most 1e6)."""


@dataclass
class LinearRestartedParams(check.Section):
    """Parameters shared by ``cd_linucb`` and ``cd_lints`` (module doc)."""

    name: str = "cd_linucb"
    # detector window in rounds, split in halves (even); the paper's value
    tau: int = 100
    # detector threshold b on ||W - W'||_Sigma; the paper's tuned value
    threshold: float = 13.0
    # lambda: A = lambda I + sum x x' (prior theta ~ N(0, sigma^2 / lambda I))
    ridge: float = 1.0

    def validate(self) -> None:
        check.even_window(self.tau, "tau")
        check.positive(self.threshold, "threshold")
        check.at_least(self.ridge, MIN_RIDGE, "ridge", "smaller ones overflow A^-1")


@dataclass
class CDLinUCBParams(LinearRestartedParams):
    name: str = "cd_linucb"
    # exploration: index x' theta_hat + alpha sqrt(x' A^-1 x); null: sigma (one posterior standard
    # deviation of the mean)
    alpha: float | None = None

    def validate(self) -> None:
        super().validate()
        if self.alpha is not None:
            check.non_negative(self.alpha, "alpha")


@dataclass
class CDLinTSParams(LinearRestartedParams):
    name: str = "cd_lints"
    # posterior scale: theta ~ N(theta_hat, v^2 A^-1); null: sigma (the exact posterior under the
    # prior above)
    v: float | None = None

    def validate(self) -> None:
        super().validate()
        if self.v is not None:
            check.non_negative(self.v, "v")


class LinearRestarted(Restarting):
    """A ridge-regression bandit restarted by the linear change detector."""

    detector: LinearShiftDetector

    def __init__(
        self, params: LinearRestartedParams, problem: Problem, model: OfflineModel, rng: BatchRNG
    ) -> None:
        R = problem.n_runs
        self.dim = model.means.shape[-1] if model.linear else problem.n_arms
        detector = LinearShiftDetector(R, self.dim, params.tau, params.threshold)
        super().__init__(params, problem, model, rng, detector)
        self._prior_inverse = np.eye(self.dim) / params.ridge
        self.inverse = np.repeat(self._prior_inverse[None], R, axis=0)  # A^-1
        self.moment = np.zeros((R, self.dim))  # b
        K = problem.n_arms
        self._one_hot = np.broadcast_to(np.eye(K), (R, K, K))  # used only when d = K

    def features(self, contexts: np.ndarray | None) -> np.ndarray:
        """``X_t`` ``(R, K, d)``: the contexts, or one-hot arms without context."""
        return self._one_hot if contexts is None else contexts

    @abstractmethod
    def choose(self, x: np.ndarray) -> np.ndarray:
        """The base algorithm's arm for every run, ``(R,)``, given features ``(R, K, d)``."""

    def act(self, t: int, contexts: np.ndarray | None) -> np.ndarray:
        return self.choose(self.features(contexts))

    def update(
        self, t: int, contexts: np.ndarray | None, actions: np.ndarray, rewards: np.ndarray
    ) -> None:
        runs = np.arange(self.problem.n_runs)
        x = self.features(contexts)[runs, actions]  # (R, d)
        from nslb_cli.agents.linear_kernels import sherman_morrison  # numba: loaded on use

        sherman_morrison(self.inverse, x)
        self.moment += x * rewards[:, None]
        self.restart_where(self.detector.update(x, rewards), t)

    def forget(self, runs: np.ndarray) -> None:
        self.inverse[runs] = self._prior_inverse
        self.moment[runs] = 0.0


class CDLinUCB(LinearRestarted):
    """CD-LinUCB: LinUCB restarted by the paper's linear change detector (Hong et al.,
    2021, section 5.2)."""

    display_name = "CD-LinUCB"
    legend_rank = 30
    style = Style("#117733", "--", "^")

    Params = CDLinUCBParams

    def choose(self, x: np.ndarray) -> np.ndarray:
        alpha = self.problem.sigma if self.params.alpha is None else self.params.alpha
        from nslb_cli.agents.linear_kernels import ucb_arms  # numba: loaded on use

        return ucb_arms(x, self.inverse, self.moment, alpha)


class CDLinTS(LinearRestarted):
    """CD-LinTS: linear Thompson sampling restarted by the paper's linear change detector
    (Hong et al., 2021, section 5.2)."""

    display_name = "CD-LinTS"
    legend_rank = 40
    style = Style("#AA4499", "-.", "v")

    Params = CDLinTSParams

    def __init__(
        self, params: CDLinTSParams, problem: Problem, model: OfflineModel, rng: BatchRNG
    ) -> None:
        super().__init__(params, problem, model, rng)
        self._noise = RoundDraws(rng.normal, (self.dim,))

    def choose(self, x: np.ndarray) -> np.ndarray:
        v = self.problem.sigma if self.params.v is None else self.params.v
        from nslb_cli.agents.linear_kernels import thompson_arms  # numba: loaded on use

        return thompson_arms(x, self.inverse, self.moment, self._noise.next(), v, JITTER)
