"""Reward models: the likelihood ``p(r | mu)`` of a reward with mean ``mu`` and its conjugate prior.

Rewards use common random numbers (docs/design.md §2): ``RewardModel.noise`` draws one
number per round and seed, ``RewardModel.realise`` maps a mean and that number to a reward.
A posterior (``Statistics``) is two arrays of one shape (Gaussian: mean and variance of
``mu``; Beta: mean ``m = a / (a + b)`` and strength ``n = a + b``); every method broadcasts.
A zero prior spread is a point mass: a known mean.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from nslb_cli.bandit.rng import BatchRNG, categorical

Statistics = tuple[np.ndarray, np.ndarray]

#: Family codes of the compiled twins of these formulas (``nslb_cli.bandit.reward_kernels``).
GAUSSIAN_KERNEL, BERNOULLI_KERNEL = 0, 1

#: Floor of probabilities in logarithms, so that an impossible reward leaves a filter finite.
SMALLEST_PROBABILITY = float(np.finfo(float).tiny)

#: Bernoulli means in divergences are kept this far from 0 and 1, so that ``kl(x, y)`` is finite.
KL_EPSILON = 1e-15

#: Newton steps of the Bernoulli kl-UCB index (``Bernoulli.upper_confidence``).
KL_NEWTON_STEPS = 8


def gaussian_log_likelihood(x: np.ndarray, mean: np.ndarray, var: np.ndarray | float) -> np.ndarray:
    """``log N(x; mean, var)``, broadcasting."""
    return -0.5 * (np.log(2.0 * np.pi * var) + (x - mean) ** 2 / var)


class RewardModel(ABC):
    """A reward likelihood and its conjugate prior.

    Attributes:
        support: ``(low, high)``, the interval every reward lies in.
        normal_sums: posteriors are normal ``(mean, variance)``, so a weighted sum of draws is
            one normal draw.
    """

    support: ClassVar[tuple[float, float]]
    normal_sums: ClassVar[bool]

    @property
    @abstractmethod
    def kernel(self) -> tuple[int, float]:
        """``(family, parameter)`` of the compiled twins (``nslb_cli.bandit.reward_kernels``)."""

    @property
    @abstractmethod
    def scale(self) -> float:
        """The sub-Gaussian constant of ``r - mu``."""

    @abstractmethod
    def noise(self, generator: np.random.Generator, n: int) -> np.ndarray:
        """The per-round random numbers of one seed, ``(n,)``, drawn from ``generator``."""

    @abstractmethod
    def realise(self, means: np.ndarray, noise: np.ndarray) -> np.ndarray:
        """The rewards of arms with means ``means`` given this round's ``noise``."""

    @abstractmethod
    def draw_means(
        self, prior_means: np.ndarray, prior_parameter: float, generator: np.random.Generator
    ) -> np.ndarray:
        """True means drawn around ``prior_means`` from the prior ``prior_parameter`` sets."""

    @abstractmethod
    def prior_sd(self, prior_means: np.ndarray, prior_parameter: float) -> np.ndarray:
        """The standard deviation of a true mean drawn by ``draw_means``."""

    @abstractmethod
    def log_likelihood(self, rewards: np.ndarray, means: np.ndarray) -> np.ndarray:
        """``log p(r | mu)``, broadcasting."""

    @abstractmethod
    def prior(self, means: np.ndarray, sd: np.ndarray) -> Statistics:
        """The conjugate prior with these means and standard deviations of ``mu``."""

    @abstractmethod
    def predictive_log_likelihood(self, stats: Statistics, rewards: np.ndarray) -> np.ndarray:
        """``log p(r | posterior) = log ∫ p(r | mu) posterior(mu) dmu``, broadcasting."""

    @abstractmethod
    def update(self, stats: Statistics, rewards: np.ndarray) -> Statistics:
        """The posterior after one more reward per entry."""

    @abstractmethod
    def variance(self, stats: Statistics) -> np.ndarray:
        """The posterior variance of ``mu``."""

    @abstractmethod
    def sample(self, stats: Statistics, rng: BatchRNG) -> np.ndarray:
        """One draw of ``mu`` per entry from the posterior; the leading axis is the runs'."""

    @abstractmethod
    def sample_given_sums(self, pulls: np.ndarray, sums: np.ndarray, rng: BatchRNG) -> np.ndarray:
        """One draw of ``mu`` per entry given ``pulls`` rewards summing to ``sums``, under the
        default prior; the leading axis is the runs'."""

    @abstractmethod
    def divergence(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """``d(x, y) = KL(p_x || p_y)`` between the laws with means ``x`` and ``y``."""

    @abstractmethod
    def upper_confidence(self, means: np.ndarray, levels: np.ndarray) -> np.ndarray:
        """The kl-UCB index ``max {q in support : d(mean, q) <= level}``, broadcasting."""


@dataclass(frozen=True)
class Gaussian(RewardModel):
    """``r ~ N(mu, sigma^2)``, ``sigma`` known; conjugate prior ``mu ~ N(m, v)``.

    Update ``m <- (sigma^2 m + v r) / (sigma^2 + v)``, ``v <- v sigma^2 / (sigma^2 + v)``.
    Default prior ``N(0, sigma^2)`` (Agrawal & Goyal 2013); prior parameter: the sd of ``mu``.
    """

    sigma: float
    support: ClassVar[tuple[float, float]] = (-np.inf, np.inf)
    normal_sums: ClassVar[bool] = True

    @property
    def scale(self) -> float:
        return self.sigma

    @property
    def kernel(self) -> tuple[int, float]:
        return GAUSSIAN_KERNEL, self.sigma**2

    def noise(self, generator: np.random.Generator, n: int) -> np.ndarray:
        """``eps_t ~ N(0, sigma^2)``."""
        return generator.normal(0.0, self.sigma, n)

    def realise(self, means: np.ndarray, noise: np.ndarray) -> np.ndarray:
        """``mu + eps_t``."""
        return means + noise

    def draw_means(
        self, prior_means: np.ndarray, prior_parameter: float, generator: np.random.Generator
    ) -> np.ndarray:
        """``mu0 + N(0, sd^2)`` with ``sd = prior_parameter``."""
        return prior_means + generator.normal(0.0, prior_parameter, np.shape(prior_means))

    def prior_sd(self, prior_means: np.ndarray, prior_parameter: float) -> np.ndarray:
        return np.full(np.shape(prior_means), prior_parameter)

    def log_likelihood(self, rewards: np.ndarray, means: np.ndarray) -> np.ndarray:
        return gaussian_log_likelihood(rewards, means, self.sigma**2)

    def prior(self, means: np.ndarray, sd: np.ndarray) -> Statistics:
        return np.asarray(means, dtype=float), np.asarray(sd, dtype=float) ** 2

    def predictive_log_likelihood(self, stats: Statistics, rewards: np.ndarray) -> np.ndarray:
        """``log N(r; m, v + sigma^2)``."""
        mean, var = stats
        return gaussian_log_likelihood(rewards, mean, var + self.sigma**2)

    def update(self, stats: Statistics, rewards: np.ndarray) -> Statistics:
        mean, var = stats
        noise = self.sigma**2
        return (noise * mean + var * rewards) / (noise + var), var * noise / (noise + var)

    def variance(self, stats: Statistics) -> np.ndarray:
        return stats[1]

    def sample(self, stats: Statistics, rng: BatchRNG) -> np.ndarray:
        """``m + sqrt(v) z``, ``z`` standard normal."""
        mean, var = stats
        return mean + np.sqrt(var) * rng.normal(mean.shape[1:])

    def sample_given_sums(self, pulls: np.ndarray, sums: np.ndarray, rng: BatchRNG) -> np.ndarray:
        scale = 1.0 / (pulls + 1.0)
        return sums * scale + self.sigma * np.sqrt(scale) * rng.normal(pulls.shape[1:])

    def divergence(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """``(x - y)^2 / (2 sigma^2)``: KL of ``N(x, sigma^2)`` from ``N(y, sigma^2)``."""
        return (np.asarray(x, dtype=float) - y) ** 2 / (2.0 * self.sigma**2)

    def upper_confidence(self, means: np.ndarray, levels: np.ndarray) -> np.ndarray:
        """``mean + sigma sqrt(2 level)``: the closed form, no search."""
        return means + self.sigma * np.sqrt(2.0 * np.maximum(levels, 0.0))


@dataclass(frozen=True)
class Bernoulli(RewardModel):
    """``r ~ Bernoulli(mu)``, ``r in {0, 1}``; conjugate prior ``mu ~ Beta(a, b)``.

    Update ``m <- m + (r - m) / (n + 1)``, ``n <- n + 1``; ``n = inf`` is a known mean. Default
    prior ``Beta(1, 1)`` (Agrawal & Goyal 2012); prior parameter: the concentration ``c`` of
    ``Beta(c mu0, c (1 - mu0))``.
    """

    support: ClassVar[tuple[float, float]] = (0.0, 1.0)
    normal_sums: ClassVar[bool] = False

    @property
    def scale(self) -> float:
        return 0.5

    @property
    def kernel(self) -> tuple[int, float]:
        return BERNOULLI_KERNEL, 0.0

    def noise(self, generator: np.random.Generator, n: int) -> np.ndarray:
        """``u_t ~ U(0, 1)``."""
        return generator.random(n)

    def realise(self, means: np.ndarray, noise: np.ndarray) -> np.ndarray:
        """``1[u_t < mu]``: 1 with probability ``mu``."""
        return (noise < means).astype(float)

    def draw_means(
        self, prior_means: np.ndarray, prior_parameter: float, generator: np.random.Generator
    ) -> np.ndarray:
        """``Beta(c mu0, c (1 - mu0))`` with ``c = prior_parameter``: mean ``mu0``."""
        return generator.beta(prior_parameter * prior_means, prior_parameter * (1.0 - prior_means))

    def prior_sd(self, prior_means: np.ndarray, prior_parameter: float) -> np.ndarray:
        """``sqrt(mu0 (1 - mu0) / (c + 1))``."""
        return np.sqrt(prior_means * (1.0 - prior_means) / (prior_parameter + 1.0))

    def log_likelihood(self, rewards: np.ndarray, means: np.ndarray) -> np.ndarray:
        """``log(mu)`` for a click, ``log(1 - mu)`` otherwise."""
        return _log_bernoulli(rewards, means)

    def prior(self, means: np.ndarray, sd: np.ndarray) -> Statistics:
        """``(m, n)`` with ``n = m (1 - m) / sd^2 - 1`` (infinite where ``sd = 0``).

        Raises:
            ValueError: where ``sd^2 >= m (1 - m)``, which no distribution on ``[0, 1]`` with
                mean ``m`` reaches.
        """
        mean = np.asarray(means, dtype=float)
        var = np.asarray(sd, dtype=float) ** 2
        spread = mean * (1.0 - mean)
        if np.any((var > 0) & (var >= spread)):
            raise ValueError(
                "a Beta prior needs sd^2 < m (1 - m) for every mean m in [0, 1]: the offline "
                "model's mean_sd is too large for Bernoulli rewards"
            )
        with np.errstate(divide="ignore", invalid="ignore"):  # 0 / 0 where known: not used
            strength = np.where(var > 0, spread / var - 1.0, np.inf)
        return mean, np.broadcast_to(strength, mean.shape).copy()

    def predictive_log_likelihood(self, stats: Statistics, rewards: np.ndarray) -> np.ndarray:
        """``log P(r | a, b)`` with ``P(r = 1) = m``."""
        return _log_bernoulli(rewards, stats[0])

    def update(self, stats: Statistics, rewards: np.ndarray) -> Statistics:
        mean, strength = stats
        return mean + (rewards - mean) / (strength + 1.0), strength + 1.0

    def variance(self, stats: Statistics) -> np.ndarray:
        """``m (1 - m) / (n + 1)``."""
        mean, strength = stats
        return mean * (1.0 - mean) / (strength + 1.0)

    def sample(self, stats: Statistics, rng: BatchRNG) -> np.ndarray:
        """``Beta(n m, n (1 - m))``; ``m`` itself where ``n`` is infinite (still one draw)."""
        mean, strength = stats
        known = np.isinf(strength)
        with np.errstate(invalid="ignore"):  # inf * 0 where known: replaced by 1
            a = np.where(known, 1.0, strength * mean)
            b = np.where(known, 1.0, strength * (1.0 - mean))
        return np.where(known, mean, rng.beta(a, b))

    def sample_given_sums(self, pulls: np.ndarray, sums: np.ndarray, rng: BatchRNG) -> np.ndarray:
        return rng.beta(1.0 + sums, 1.0 + pulls - sums)

    def divergence(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """The binary relative entropy ``x log(x / y) + (1 - x) log((1 - x) / (1 - y))``."""
        x = np.clip(x, KL_EPSILON, 1.0 - KL_EPSILON)
        y = np.clip(y, KL_EPSILON, 1.0 - KL_EPSILON)
        return x * np.log(x / y) + (1.0 - x) * np.log((1.0 - x) / (1.0 - y))

    def upper_confidence(self, means: np.ndarray, levels: np.ndarray) -> np.ndarray:
        """``max {q in [p, 1] : kl(p, q) <= L}`` by ``KL_NEWTON_STEPS`` Newton steps.

        The steps run in ``w = log(1 - q)``, where ``g(w) = kl(p, 1 - e^w)`` is convex and
        decreasing: ``w <- w + (g(w) - L) q / (q - p)``, from the smallest of three points
        with ``kl >= L``:

        * Pinsker, ``kl(p, q) >= 2 (q - p)^2``: ``q = p + sqrt(L / 2)``;
        * ``kl(p, q) >= (q - p)^2 / (2 q)`` for ``q >= p``: ``q = p + L + sqrt(L^2 + 2 p L)``;
        * ``kl(p, q) >= p log p + (1 - p) log((1 - p) / (1 - q))``:
          ``w = log(1 - p) - (L - p log p) / (1 - p)``, which covers roots within 1e-300 of 1.

        The index is ``p`` where ``L <= 0``, 1 where ``p = 1`` or ``L`` is infinite.
        """
        p = np.clip(np.asarray(means, dtype=float), 0.0, 1.0)
        level = np.asarray(levels, dtype=float)
        done = (level <= 0.0) | (p >= 1.0) | np.isinf(level)
        L = np.where(done, 1.0, level)  # placeholders where the answer is known
        pc = np.minimum(p, 1.0 - 1e-12)
        rest = 1.0 - pc
        log_rest = np.log1p(-pc)
        with np.errstate(divide="ignore", invalid="ignore"):  # p = 0: 0 log 0, replaced by 0
            plogp = np.where(pc > 0.0, pc * np.log(pc), 0.0)
            q_start = np.minimum(pc + np.sqrt(L / 2.0), pc + L + np.sqrt(L * L + 2.0 * pc * L))
            w = np.maximum(np.log1p(-np.minimum(q_start, 1.0)), log_rest - (L - plogp) / rest)
        # g(w) - L = p log p + (1 - p) log(1 - p) - L - p log(q) - (1 - p) w
        offset = plogp + rest * log_rest - L
        for _ in range(KL_NEWTON_STEPS):
            q = -np.expm1(w)
            w += (offset - pc * np.log(q) - rest * w) * q / (q - pc)
        q = -np.expm1(w)
        return np.where(level <= 0.0, p, np.where(done, 1.0, np.clip(q, p, 1.0)))


@dataclass(frozen=True)
class Categorical(Bernoulli):
    """One of ``N`` outcomes per pull, ``o ~ O[S_t, A_t, ·]``, rewarded ``values[o]``
    (docs/design.md §3.5); model-free agents use Bernoulli's formulas.
    """

    values: tuple[float, ...] = (0.0, 1.0)

    def __post_init__(self) -> None:
        values = np.asarray(self.values, dtype=float)
        if values.ndim != 1 or len(values) < 2 or not np.isfinite(values).all():
            raise ValueError("outcome rewards must be at least 2 finite numbers")
        if values.min() < 0.0 or values.max() > 1.0 or len(np.unique(values)) < len(values):
            raise ValueError("outcome rewards must be distinct numbers in [0, 1]")

    def realise(self, means: np.ndarray, noise: np.ndarray) -> np.ndarray:
        """``values[o]`` with ``o`` the inverse-CDF draw of ``u_t`` from the outcome laws
        ``means`` (``(..., N)``, the pulled arms' rows ``O[S_t, A_t, ·]``)."""
        return np.asarray(self.values)[categorical(means, noise)]

    def outcome(self, rewards: np.ndarray) -> np.ndarray:
        """The outcome index ``o`` behind each reward ``values[o]``."""
        order = np.argsort(self.values)
        return order[np.searchsorted(np.asarray(self.values)[order], rewards)]

    def outcome_log_likelihood(
        self, emissions: np.ndarray, actions: np.ndarray, rewards: np.ndarray
    ) -> np.ndarray:
        """``log O[s, A_t, o_t]`` per state, state-major ``(S, R)``, for ``emissions`` of shape
        ``(R, S, K, N)``; floored at ``SMALLEST_PROBABILITY``."""
        runs = np.arange(len(actions))
        laws = emissions[runs, :, actions, self.outcome(rewards)]  # (R, S)
        return np.log(np.maximum(laws, SMALLEST_PROBABILITY)).T


def _log_bernoulli(rewards: np.ndarray, means: np.ndarray) -> np.ndarray:
    """``log P(r)`` for ``r ~ Bernoulli(mu)``, ``r in {0, 1}``, floored at
    ``SMALLEST_PROBABILITY``."""
    probability = rewards * means + (1.0 - rewards) * (1.0 - means)
    return np.log(np.maximum(probability, SMALLEST_PROBABILITY))
