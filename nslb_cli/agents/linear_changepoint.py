"""CD-LinUCB and CD-LinTS: ridge-regression bandits restarted by the linear detector (5.2).

The paper's MovieLens baselines "are given movie vectors from the training set as context,
and need to only learn the user vector". Per run the agent keeps, since its last restart,
the ridge statistics of the pulled arms' features ``x_i = X_i[A_i]`` and rewards ``y_i``::

    A = lambda I + sum_i x_i x_i',   b = sum_i x_i y_i,   theta_hat = A^-1 b

(``lambda`` = ``ridge``), and a :class:`~nslb_cli.detectors.LinearShiftDetector` on its last
``tau`` rounds. After observing ``R_t``, if the detector fires the run restarts: ``A``, ``b``
and the detector's window are cleared.

Base algorithms, with ``X_t[a]`` the features of arm ``a``:

* ``cd_linucb``: LinUCB, ``A_t = argmax_a X_t[a]' theta_hat + alpha sqrt(X_t[a]' A^-1 X_t[a])``
  (ties: lowest index).
* ``cd_lints``: linear Gaussian Thompson sampling, ``theta ~ N(theta_hat, v^2 A^-1)``,
  ``A_t = argmax_a X_t[a]' theta``.

Defaults. With prior ``theta ~ N(0, sigma^2 / lambda I)`` and known noise ``sigma`` the
posterior is exactly ``N(theta_hat, sigma^2 A^-1)``, so ``alpha = v = sigma`` (``null``) makes
LinTS sample from that posterior and LinUCB add one posterior standard deviation of the
mean. Theory-driven LinUCB radii (``sigma sqrt(d log n)`` and more) over-explore at
``n = 2000``, ``d = 20``; the paper reports no values. Measured on ML-100K (100/100 filter,
12 paired seeds, final cumulative regret of cd_linucb): alpha = 0.5 (sigma) 331 ± 18, 1.0
362 ± 21, 2.0 395 ± 21, 3.0 434 ± 20. Without the log factor of UCB1 the bonus can lock onto
a near-best arm in a multi-armed world; raise ``alpha`` there. ``lambda = 1``: a unit prior on
``theta``, of the order of the MovieLens user vectors. ``tau = 100`` and ``threshold = 13``
are the paper's tuned detector values (section 5.2).

Without context (multi-armed environments) the features are one-hot, ``X_t = I_K``: then
``A`` is diagonal with ``lambda + n_a``, LinUCB is a UCB with bonus ``alpha / sqrt(lambda +
n_a)`` and LinTS is Gaussian Thompson sampling per arm, and the detector compares per-arm
means of the two halves weighted by the pulls.
"""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass

import numpy as np

from nslb_cli import params as check
from nslb_cli.agents.detectors import LinearShiftDetector
from nslb_cli.agents.restarting import Restarting
from nslb_cli.models import OfflineModel, Problem
from nslb_cli.rng import BatchRNG

JITTER = 1e-12  # relative diagonal jitter before the Cholesky factor of A^-1


@dataclass
class LinearRestartedParams:
    """Parameters shared by ``cd_linucb`` and ``cd_lints`` (module doc)."""

    name: str = "cd_linucb"
    tau: int = 100
    threshold: float = 13.0
    ridge: float = 1.0

    def __post_init__(self) -> None:
        check.even_window(self.tau, "tau")
        check.positive(self.threshold, "threshold")
        check.positive(self.ridge, "ridge")


@dataclass
class CDLinUCBParams(LinearRestartedParams):
    name: str = "cd_linucb"
    alpha: float | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.alpha is not None:
            check.non_negative(self.alpha, "alpha")


@dataclass
class CDLinTSParams(LinearRestartedParams):
    name: str = "cd_lints"
    v: float | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.v is not None:
            check.non_negative(self.v, "v")


class LinearRestarted(Restarting):
    """A ridge-regression bandit restarted by the linear change detector."""

    def __init__(
        self, params: LinearRestartedParams, problem: Problem, model: OfflineModel, rng: BatchRNG
    ) -> None:
        R = problem.n_runs
        self.dim = model.means.shape[-1] if model.linear else problem.n_arms
        detector = LinearShiftDetector(R, self.dim, params.tau, params.threshold)
        super().__init__(params, problem, model, rng, detector)
        self._prior = params.ridge * np.eye(self.dim)
        self.gram = np.repeat(self._prior[None], R, axis=0)  # A
        self.moment = np.zeros((R, self.dim))  # b
        K = problem.n_arms
        self._one_hot = np.broadcast_to(np.eye(K), (R, K, K))  # used only when d = K

    def features(self, contexts: np.ndarray | None) -> np.ndarray:
        """``X_t`` ``(R, K, d)``: the contexts, or one-hot arms without context."""
        return self._one_hot if contexts is None else contexts

    def estimate(self) -> tuple[np.ndarray, np.ndarray]:
        """``theta_hat`` ``(R, d)`` and ``A^-1`` ``(R, d, d)`` (per-matrix LAPACK inverse)."""
        inverse = np.linalg.inv(self.gram)
        inverse = 0.5 * (inverse + np.swapaxes(inverse, -1, -2))
        return (inverse * self.moment[:, None, :]).sum(axis=-1), inverse

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
        self.gram += x[:, :, None] * x[:, None, :]
        self.moment += x * rewards[:, None]
        self.restart_where(self.detector.update(x, rewards), t)

    def forget(self, runs: np.ndarray) -> None:
        self.gram[runs] = self._prior
        self.moment[runs] = 0.0


class CDLinUCB(LinearRestarted):
    """LinUCB restarted by the linear detector (module docstring)."""

    Params = CDLinUCBParams

    def choose(self, x: np.ndarray) -> np.ndarray:
        sigma = self.problem.sigma
        alpha = sigma if self.params.alpha is None else self.params.alpha
        theta, inverse = self.estimate()
        mean = (x * theta[:, None, :]).sum(axis=-1)
        spread = ((x[:, :, None, :] * inverse[:, None, :, :]).sum(axis=-1) * x).sum(axis=-1)
        return (mean + alpha * np.sqrt(np.maximum(spread, 0.0))).argmax(axis=1)


class CDLinTS(LinearRestarted):
    """Linear Gaussian Thompson sampling restarted by the linear detector (module docstring)."""

    Params = CDLinTSParams

    def choose(self, x: np.ndarray) -> np.ndarray:
        v = self.problem.sigma if self.params.v is None else self.params.v
        theta, inverse = self.estimate()
        scale = np.trace(inverse, axis1=-2, axis2=-1)[:, None, None] / self.dim
        factor = np.linalg.cholesky(inverse + JITTER * scale * np.eye(self.dim))
        noise = self.rng.normal((self.dim,))
        theta = theta + v * (factor * noise[:, None, :]).sum(axis=-1)
        return (x * theta[:, None, :]).sum(axis=-1).argmax(axis=1)
