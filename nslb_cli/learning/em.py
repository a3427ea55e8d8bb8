"""Baum–Welch (EM) for a latent bandit model learned offline from logged interactions
(docs/design.md §3.7).

The model is an HMM in which the arm pulled is an input and the reward the emission:
``S_1 ~ pi``, ``S_{t+1} ~ P[S_t]``, and given ``S_t = s`` and arm ``a_t = a``

* Gaussian: ``r_t ~ N(mu(a, s), sigma_s^2)`` (one ``sigma`` for all states when shared);
* Bernoulli: ``r_t ~ Bernoulli(mu(a, s))``;
* categorical: outcome ``o_t ~ O[s, a, ·]`` (the switching-latent family's observation model).

Each iteration takes the expected sufficient statistics under the current parameters
(``forward_backward.expected_counts``) and sets the parameters to their maximisers:

    pi = E[#S_1 = s] / M,    P[s, s'] = E[#s -> s'] / E[#s -> ·],
    mu(a, s) = E[sum of r over pulls of a in s] / E[pulls of a in s],
    sigma_s^2 = E[sum over pulls in s of (r - mu(a, s))^2] / E[pulls in s],
    O[s, a, o] = E[#o from a in s] / E[pulls of a in s].

The log-likelihood never decreases from one iteration to the next. Several restarts from
random parameters; the one of highest final log-likelihood is kept.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

import numpy as np

from nslb_cli.common.cpus import usable_cpus
from nslb_cli.learning.forward_backward import expected_counts

EMISSIONS = ("gaussian", "bernoulli", "categorical")
TINY = 1e-12  # probabilities are kept this far from 0 and 1, so that logarithms stay finite
MIN_SIGMA = 1e-6
CHUNK = 1 << 16  # logged rounds per call of the forward-backward pass (a thread's share)
BURN_IN = 1e-5  # the tolerance of each restart before the best goes on alone
WINDOW = 50  # logged rounds of a window that the starting points cluster


@dataclass(frozen=True)
class Logs:
    """Logged interactions, sequences padded to one length: sequence ``m`` holds the first
    ``lengths[m]`` entries of ``arms[m]`` (``(M, T)`` ints) and ``rewards[m]`` (the reward, or
    the outcome's index for categorical outcomes)."""

    arms: np.ndarray
    rewards: np.ndarray
    lengths: np.ndarray

    @classmethod
    def from_sequences(cls, sequences: Sequence[tuple[np.ndarray, np.ndarray]]) -> Logs:
        """Logs of ``(arms, rewards)`` pairs, one per sequence."""
        lengths = np.array([len(arms) for arms, _ in sequences], dtype=np.int64)
        arms = np.zeros((len(sequences), int(lengths.max(initial=1))), dtype=np.int64)
        rewards = np.zeros(arms.shape)
        for m, (pulled, got) in enumerate(sequences):
            arms[m, : lengths[m]] = pulled
            rewards[m, : lengths[m]] = got
        return cls(arms, rewards, lengths)

    @property
    def n_rounds(self) -> int:
        return int(self.lengths.sum())


@dataclass(frozen=True)
class Parameters:
    """``pi`` ``(S,)``, ``P`` ``(S, S)`` and the emission: ``means[s, a] = mu(a, s)`` and
    ``sigma`` ``(S,)`` (Gaussian), ``means`` (Bernoulli) or ``outcomes[s, a, o] = O[s, a, o]``
    (categorical)."""

    initial: np.ndarray
    transitions: np.ndarray
    means: np.ndarray | None = None
    sigma: np.ndarray | None = None
    outcomes: np.ndarray | None = None

    def reordered(self, order: np.ndarray) -> Parameters:
        """The same model with its states relabelled: new state ``s`` is old ``order[s]``."""
        taken = {f.name: getattr(self, f.name) for f in fields(self)}
        moved: dict[str, Any] = {k: None if v is None else v[order] for k, v in taken.items()}
        moved["transitions"] = self.transitions[np.ix_(order, order)]
        return replace(self, **moved)


@dataclass(frozen=True)
class Counts:
    """Expected sufficient statistics: ``E[#S_1 = s]``, ``E[#s -> s']``, and per state and arm
    the expected pulls, sums and sums of squares of rewards, and outcome counts."""

    initial: np.ndarray
    transitions: np.ndarray
    pulls: np.ndarray
    sums: np.ndarray
    squares: np.ndarray
    outcomes: np.ndarray


@dataclass(frozen=True)
class Fit:
    """A fitted model: the best restart's parameters, the log-likelihood of every iteration's
    parameters (the first the initial ones, the last the final ones), and the expected
    sufficient statistics under the final parameters."""

    emission: str
    parameters: Parameters
    log_likelihood: np.ndarray
    iterations: int
    restarts: int
    converged: bool
    n_rounds: int
    counts: Counts

    def to_dict(self) -> dict[str, Any]:
        """The fit as plain JSON types (a file a user can read)."""
        return _plain(asdict(self))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Fit:
        def arrays(part: dict[str, Any]) -> dict[str, Any]:
            return {k: None if v is None else np.asarray(v, dtype=float) for k, v in part.items()}

        return cls(
            emission=str(data["emission"]),
            parameters=Parameters(**arrays(data["parameters"])),
            log_likelihood=np.asarray(data["log_likelihood"], dtype=float),
            iterations=int(data["iterations"]),
            restarts=int(data["restarts"]),
            converged=bool(data["converged"]),
            n_rounds=int(data["n_rounds"]),
            counts=Counts(**arrays(data["counts"])),
        )


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, np.ndarray):
        return value.tolist()
    return value.item() if isinstance(value, np.generic) else value


def fit(
    logs: Logs,
    n_states: int,
    n_arms: int,
    emission: str = "gaussian",
    *,
    n_outcomes: int | None = None,
    shared_noise: bool = True,
    restarts: int = 5,
    tolerance: float = 1e-6,
    max_iterations: int = 200,
    seed: int = 0,
    start: Parameters | None = None,
) -> Fit:
    """Fit ``logs`` by EM from ``start``, or from ``restarts`` random starting points, each until
    the mean log-likelihood per round gains less than ``BURN_IN``, the one of highest
    log-likelihood then going on alone; until the gain is less than ``tolerance``, or after
    ``max_iterations`` in all."""
    if emission not in EMISSIONS:
        raise ValueError(f"emission must be one of {', '.join(EMISSIONS)}, got {emission!r}")
    outcomes = n_outcomes if emission == "categorical" else 1
    if outcomes is None:
        raise ValueError("categorical emissions need n_outcomes")
    model = _Model(logs, n_states, n_arms, emission, outcomes, shared_noise)
    if start is not None:
        return model.climb(start, tolerance, max_iterations)
    rng = np.random.default_rng(seed)
    starts = [model.random(rng) for _ in range(restarts)]
    burnt = [model.climb(first, max(tolerance, BURN_IN), max_iterations) for first in starts]
    best = max(burnt, key=lambda one: one.log_likelihood[-1])
    if tolerance < BURN_IN and best.iterations < max_iterations:
        best = model.climb(best, tolerance, max_iterations)
    return replace(best, restarts=restarts)


@dataclass(frozen=True)
class _Model:
    """The logs and the model's shape: one EM run from given starting parameters."""

    logs: Logs
    n_states: int
    n_arms: int
    emission: str
    n_outcomes: int
    shared_noise: bool

    def climb(self, start: Parameters | Fit, tolerance: float, max_iterations: int) -> Fit:
        """EM from ``start`` (or on from a fit, whose iterations count) until the per-round
        gain is below ``tolerance``, or ``max_iterations`` in all."""
        if isinstance(start, Fit):
            parameters, counts = start.parameters, start.counts
            history = [float(v) for v in start.log_likelihood]
        else:
            parameters = start
            log_likelihood, counts = self.e_step(parameters)
            history = [log_likelihood]
        converged = False
        while len(history) <= max_iterations and not converged:
            parameters = self.m_step(counts, parameters)
            log_likelihood, counts = self.e_step(parameters)
            converged = bool(log_likelihood - history[-1] < tolerance * self.logs.n_rounds)
            history.append(log_likelihood)
        return Fit(
            emission=self.emission,
            parameters=parameters,
            log_likelihood=np.array(history),
            iterations=len(history) - 1,
            restarts=1,
            converged=converged,
            n_rounds=self.logs.n_rounds,
            counts=counts,
        )

    def e_step(self, parameters: Parameters) -> tuple[float, Counts]:
        """The log-likelihood of the logs under ``parameters`` and the expected counts: the
        forward-backward pass over chunks of ``CHUNK`` rounds, in threads, summed in order
        (so that the sums do not depend on the number of cores)."""
        logs, gaussian = self.logs, self.emission == "gaussian"
        S, K = self.n_states, self.n_arms
        means, var, table = np.zeros((S, K)), np.ones(S), np.zeros((S, K, 1))
        if gaussian:
            assert parameters.means is not None and parameters.sigma is not None
            means, var = parameters.means, parameters.sigma**2
        elif self.emission == "bernoulli":
            assert parameters.means is not None
            mu = np.clip(parameters.means, TINY, 1.0 - TINY)
            table = np.log(np.stack([1.0 - mu, mu], axis=-1))
        else:
            assert parameters.outcomes is not None
            table = np.log(np.maximum(parameters.outcomes, TINY))
        per = max(1, CHUNK // logs.arms.shape[1])
        chunks = [slice(first, first + per) for first in range(0, len(logs.lengths), per)]

        def counted(rows: slice) -> tuple[Any, ...]:
            return expected_counts(
                gaussian, means, var, table, logs.arms[rows], logs.rewards[rows],
                logs.lengths[rows], parameters.initial, parameters.transitions,
            )  # fmt: skip

        with ThreadPoolExecutor(min(usable_cpus(), len(chunks))) as pool:
            found = list(pool.map(counted, chunks))
        totals = [sum(part[k] for part in found) for k in range(7)]
        return float(totals[0]), Counts(*totals[1:])

    def m_step(self, counts: Counts, previous: Parameters) -> Parameters:
        """The parameters that maximise the expected complete-data log-likelihood."""
        moves = counts.transitions.sum(axis=1, keepdims=True)
        transitions = np.where(moves > 0, counts.transitions / np.maximum(moves, TINY), 0.0)
        stuck = moves[:, 0] <= 0  # a state never left in expectation keeps its row
        transitions[stuck] = previous.transitions[stuck]
        initial = counts.initial / counts.initial.sum()
        pulled = counts.pulls > 0
        if self.emission == "categorical":
            assert previous.outcomes is not None
            laws = counts.outcomes / np.maximum(counts.pulls, TINY)[..., None]
            laws = np.where(pulled[..., None], laws, previous.outcomes)
            return Parameters(initial, transitions, outcomes=laws)
        assert previous.means is not None
        means = np.where(pulled, counts.sums / np.maximum(counts.pulls, TINY), previous.means)
        if self.emission == "bernoulli":
            return Parameters(initial, transitions, means=means)
        residual = counts.squares - 2.0 * means * counts.sums + means**2 * counts.pulls
        if self.shared_noise:
            var = np.full(self.n_states, residual.sum() / counts.pulls.sum())
        else:
            var = residual.sum(axis=1) / np.maximum(counts.pulls.sum(axis=1), TINY)
        sigma = np.sqrt(np.maximum(var, MIN_SIGMA**2))
        return Parameters(initial, transitions, means=means, sigma=sigma)

    def random(self, rng: np.random.Generator) -> Parameters:
        """A starting point: a uniform ``pi``, rows of ``P`` half on staying and half drawn
        from ``Dir(1)``, and emissions from a k-means++ clustering (``rng``'s) of windows of
        ``WINDOW`` logged rounds by their arms' mean rewards (or outcome frequencies): a
        window of a slowly switching chain mostly sees one state."""
        from scipy.cluster.vq import kmeans2  # scipy loads in 0.3 s: a run without EM spares it

        S = self.n_states
        transitions = 0.5 * np.eye(S) + 0.5 * rng.dirichlet(np.ones(S), size=S)
        initial = np.full(S, 1.0 / S)
        with warnings.catch_warnings():  # few windows: a cluster may be empty, as it may
            warnings.simplefilter("ignore")
            centres, _ = kmeans2(self._windows(), S, minit="++", seed=rng)
        if self.emission == "categorical":
            laws = np.maximum(centres.reshape(S, self.n_arms, self.n_outcomes), TINY)
            return Parameters(initial, transitions, outcomes=laws / laws.sum(-1, keepdims=True))
        if self.emission == "bernoulli":
            return Parameters(initial, transitions, means=np.clip(centres, 0.05, 0.95))
        spread = max(float(self._logged()[1].std()), MIN_SIGMA)
        return Parameters(initial, transitions, means=centres, sigma=np.full(S, spread))

    def _windows(self) -> np.ndarray:
        """Each window's mean reward of each arm (categorical: the frequency of each outcome
        of each arm), ``(windows, K)`` or ``(windows, K N)``; the arm's pooled value where a
        window never pulled it."""
        logs, K, N = self.logs, self.n_arms, self.n_outcomes
        kept = np.arange(logs.arms.shape[1]) < logs.lengths[:, None]
        per_row = -(-logs.arms.shape[1] // WINDOW)
        window = np.arange(logs.arms.shape[1]) // WINDOW + np.arange(len(kept))[:, None] * per_row
        _, window = np.unique(window[kept], return_inverse=True)
        arms, rewards = logs.arms[kept], logs.rewards[kept]
        if self.emission == "categorical":
            arms, rewards = arms * N + rewards.astype(np.int64), np.ones(len(arms))
            K = K * N
        cell = window * K + arms
        width = int(window.max()) + 1
        pulls = np.bincount(cell, minlength=width * K).reshape(width, K)
        sums = np.bincount(cell, weights=rewards, minlength=width * K).reshape(width, K)
        if self.emission == "categorical":  # frequencies among the arm's pulls
            pulls = np.repeat(pulls.reshape(width, -1, N).sum(-1), N, axis=1)
        pooled = sums.sum(0) / np.maximum(pulls.sum(0), 1)
        return np.where(pulls > 0, sums / np.maximum(pulls, 1), pooled)

    def _logged(self) -> tuple[np.ndarray, np.ndarray]:
        """The arms and rewards of every logged round, flat."""
        logs = self.logs
        kept = np.arange(logs.arms.shape[1]) < logs.lengths[:, None]
        return logs.arms[kept], logs.rewards[kept]
