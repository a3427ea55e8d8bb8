"""Reward models: the one place that knows how a reward is distributed given its mean.

A reward model is the likelihood ``p(r | mu)`` of a reward ``r`` whose mean is
``mu = mu(A_t, X_t, S_t)``, together with its conjugate prior on ``mu``. Environments use it
to realise rewards and to draw true means from a prior; agents use it to weigh latent
states, to learn means and to sample them. Nothing else depends on which model is in use:
every likelihood-specific formula is a method here, and no agent or environment asks for a
model's name.

* :class:`Gaussian`: ``r ~ N(mu, sigma^2)`` with known ``sigma``; conjugate prior
  ``mu ~ N(m, v)``.
* :class:`Bernoulli`: ``r ~ Bernoulli(mu)``, ``r in {0, 1}`` (a click); conjugate prior
  ``mu ~ Beta(a, b)``.
* :class:`Categorical`: one of ``N`` outcomes ``o ~ O[s, a, ·]``, the reward ``r[o]`` in
  ``[0, 1]`` (switching latent bandits); the law is the environment's known observation model,
  and the model-free formulas are Bernoulli's.

Common random numbers (docs/design.md §2). An environment draws one number per round and seed,
:meth:`RewardModel.noise`, whatever the agent does; the reward of the arm pulled is a
function of its mean and that number, :meth:`RewardModel.realise`: ``mu + eps_t`` with
``eps_t ~ N(0, sigma^2)``, or ``1[u_t < mu]`` with ``u_t ~ U(0, 1)`` (so
``P(r = 1) = mu``). Every agent run with a seed faces the same world.

Posteriors. A conjugate posterior of one mean per entry is kept as :data:`Statistics`, two
arrays of one shape in the model's own parameterisation (Gaussian: mean and variance of
``mu``; Beta: mean ``m = a / (a + b)`` and strength ``n = a + b``). Every method works
elementwise and broadcasts, so the same code serves arrays per arm, per state, per particle.
A zero prior spread (variance 0, strength infinite) is a point mass: a known mean, which
observations leave unchanged.

Divergences. Model-free change detectors and kl-UCB indices compare means through the
Kullback-Leibler divergence ``d(x, y)`` between the model's laws of means ``x`` and ``y``
(:meth:`RewardModel.divergence`) and invert it (:meth:`RewardModel.upper_confidence`):
``(x - y)^2 / (2 sigma^2)`` and ``x + sigma sqrt(2 L)`` for Gaussian rewards, the binary
relative entropy and a few Newton steps for Bernoulli ones.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from nslb_cli.bandit.rng import BatchRNG, categorical

Statistics = tuple[np.ndarray, np.ndarray]
"""A conjugate posterior per entry: two arrays of one shape (see the module docstring)."""

#: Family codes of the compiled twins of these formulas (:mod:`nslb_cli.bandit.reward_kernels`).
GAUSSIAN_KERNEL, BERNOULLI_KERNEL = 0, 1

#: Probabilities below this are treated as this in logarithms, so that a reward impossible
#: under every latent state (a Bernoulli mean of exactly 0 or 1) leaves a filter finite.
SMALLEST_PROBABILITY = float(np.finfo(float).tiny)

#: Bernoulli means in divergences are kept this far from 0 and 1, so that
#: ``kl(x, y)`` is finite (a mean of exactly 0 or 1 only ever meets ``x = y``).
KL_EPSILON = 1e-15

#: Newton steps of the Bernoulli kl-UCB index (:meth:`Bernoulli.upper_confidence`): from its
#: starting points the error falls below 1e-12 within eight steps on the whole range of means
#: and levels a bandit meets (tests/bandit/test_rewards.py checks a grid against bisection).
KL_NEWTON_STEPS = 8


def gaussian_log_likelihood(x: np.ndarray, mean: np.ndarray, var: np.ndarray | float) -> np.ndarray:
    """``log N(x; mean, var)``, broadcasting."""
    return -0.5 * (np.log(2.0 * np.pi * var) + (x - mean) ** 2 / var)


class RewardModel(ABC):
    """A reward likelihood and its conjugate prior (module docstring).

    Attributes:
        support: ``(low, high)``, the interval every reward lies in.
        normal_sums: the posterior of a mean is normal and its statistics are its mean and
            variance, so a weighted sum of independent posterior draws is itself normal, with
            the weighted means and squared-weighted variances summed (one draw instead of
            many).
    """

    support: ClassVar[tuple[float, float]]
    normal_sums: ClassVar[bool]

    @property
    @abstractmethod
    def kernel(self) -> tuple[int, float]:
        """``(family, parameter)``: what compiled code passes to this model's compiled twins
        in :mod:`nslb_cli.bandit.reward_kernels`."""

    @property
    @abstractmethod
    def scale(self) -> float:
        """The sub-Gaussian constant of ``r - mu``: agents that need only a noise scale (UCB
        radii, change-detector thresholds) use it in place of ``sigma``."""

    # The environment's side: realising rewards, drawing true means.

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
        """True means drawn around ``prior_means`` from the conjugate prior that
        ``prior_parameter`` sets (its meaning is the model's: see the subclasses)."""

    @abstractmethod
    def prior_sd(self, prior_means: np.ndarray, prior_parameter: float) -> np.ndarray:
        """The standard deviation of a true mean drawn by :meth:`draw_means`."""

    # The agent's side: likelihoods and conjugate posteriors.

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
        """One draw of ``mu`` per entry given ``pulls`` rewards that sum to ``sums``, under the
        model's default prior (Thompson sampling without an offline model); the leading axis
        is the runs'."""

    # Divergences: the change detectors and kl-UCB indices of the model-free baselines.

    @abstractmethod
    def divergence(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """``d(x, y) = KL(p_x || p_y)``, the Kullback-Leibler divergence from the model's law
        with mean ``y`` to its law with mean ``x``, broadcasting; ``0`` where ``x = y``."""

    @abstractmethod
    def upper_confidence(self, means: np.ndarray, levels: np.ndarray) -> np.ndarray:
        """The kl-UCB index ``max {q in support : d(mean, q) <= level}``, broadcasting.

        ``mean`` itself where ``level <= 0``; the top of the support where ``level`` is
        infinite."""


@dataclass(frozen=True)
class Gaussian(RewardModel):
    """``r ~ N(mu, sigma^2)``, ``sigma`` known; conjugate prior ``mu ~ N(m, v)``.

    Statistics: ``(m, v)``, the posterior mean and variance of ``mu``. After a reward ``r``::

        m <- (sigma^2 m + v r) / (sigma^2 + v),   v <- v sigma^2 / (sigma^2 + v)

    posterior predictive ``r ~ N(m, v + sigma^2)``. Default prior (:meth:`sample_given_sums`)
    ``N(0, sigma^2)``: after ``n`` rewards summing to ``y``, ``mu ~ N(y / (n + 1),
    sigma^2 / (n + 1))`` (Agrawal & Goyal 2013). The environment's prior parameter is the
    standard deviation ``sd`` of a true mean around its prior mean: ``mu = mu0 + N(0, sd^2)``.
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

    Statistics: ``(m, n)`` with ``m = a / (a + b)`` the posterior mean and ``n = a + b`` the
    strength (prior pseudo-observations plus rewards seen). After a reward ``r``::

        a <- a + r,  b <- b + 1 - r,   i.e.   m <- m + (r - m) / (n + 1),  n <- n + 1

    posterior predictive ``P(r = 1) = a / (a + b) = m``. ``n = inf`` is a known mean. The
    prior with mean ``m`` and standard deviation ``sd`` (:meth:`prior`) matches the moments
    of ``Beta(n m, n (1 - m))``, whose variance is ``m (1 - m) / (n + 1)``:
    ``n = m (1 - m) / sd^2 - 1``. Default prior (:meth:`sample_given_sums`) ``Beta(1, 1)``:
    after ``n`` rewards summing to ``y``, ``mu ~ Beta(1 + y, 1 + n - y)`` (Agrawal & Goyal
    2012). The environment's prior parameter is the concentration ``c``: true means
    ``mu ~ Beta(c mu0, c (1 - mu0))`` around prior means ``mu0``. The sub-Gaussian constant
    of a reward in ``[0, 1]`` is ``1/2``.
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
        """``log P(r | a, b)`` with ``P(r = 1) = a / (a + b) = m``."""
        return _log_bernoulli(rewards, stats[0])

    def update(self, stats: Statistics, rewards: np.ndarray) -> Statistics:
        mean, strength = stats
        return mean + (rewards - mean) / (strength + 1.0), strength + 1.0

    def variance(self, stats: Statistics) -> np.ndarray:
        """``m (1 - m) / (n + 1)``."""
        mean, strength = stats
        return mean * (1.0 - mean) / (strength + 1.0)

    def sample(self, stats: Statistics, rng: BatchRNG) -> np.ndarray:
        """``Beta(n m, n (1 - m))``; ``m`` itself where ``n`` is infinite. Every entry takes
        one Beta draw, so a run's draws do not depend on which of its means are known."""
        mean, strength = stats
        known = np.isinf(strength)
        with np.errstate(invalid="ignore"):  # inf * 0 where known: replaced by 1
            a = np.where(known, 1.0, strength * mean)
            b = np.where(known, 1.0, strength * (1.0 - mean))
        return np.where(known, mean, rng.beta(a, b))

    def sample_given_sums(self, pulls: np.ndarray, sums: np.ndarray, rng: BatchRNG) -> np.ndarray:
        return rng.beta(1.0 + sums, 1.0 + pulls - sums)

    def divergence(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """The binary relative entropy ``x log(x / y) + (1 - x) log((1 - x) / (1 - y))``.

        Both means are kept in ``[KL_EPSILON, 1 - KL_EPSILON]``: a mean of exactly 0 or 1
        then gives a finite value, within 1e-13 of the limit with ``0 log 0 = 0`` (and 0
        where ``x = y``)."""
        x = np.clip(x, KL_EPSILON, 1.0 - KL_EPSILON)
        y = np.clip(y, KL_EPSILON, 1.0 - KL_EPSILON)
        return x * np.log(x / y) + (1.0 - x) * np.log((1.0 - x) / (1.0 - y))

    def upper_confidence(self, means: np.ndarray, levels: np.ndarray) -> np.ndarray:
        """``max {q in [p, 1] : kl(p, q) <= L}`` by :data:`KL_NEWTON_STEPS` Newton steps.

        ``q -> kl(p, q)`` increases on ``[p, 1)`` and tends to infinity at 1, so the root
        ``q*`` of ``kl(p, q) = L`` is the index. The steps run in ``w = log(1 - q)``, where
        ``g(w) = kl(p, 1 - e^w) = p log(p / q) + (1 - p) (log(1 - p) - w)`` is convex and
        decreasing, nearly linear as ``q -> 1``: ``w <- w + (g(w) - L) q / (q - p)``. They
        start from the smallest of three points with ``kl >= L`` (so to the left of the root
        in ``w``, from where convex Newton steps increase monotonically to it):

        * Pinsker, ``kl(p, q) >= 2 (q - p)^2``: ``q = p + sqrt(L / 2)``;
        * ``kl(p, q) >= (q - p)^2 / (2 q)`` for ``q >= p``: ``q = p + L + sqrt(L^2 + 2 p L)``;
        * ``kl(p, q) >= p log p + (1 - p) log((1 - p) / (1 - q))``:
          ``w = log(1 - p) - (L - p log p) / (1 - p)``, which covers roots within 1e-300 of 1.

        The index is ``p`` where ``L <= 0``, 1 where ``p = 1`` or ``L`` is infinite.
        Accurate to about 1e-12 (tests: against a 200-step bisection).
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
    (docs/design.md §3.5).

    The law of a pull is a table of outcome probabilities, not a mean: the environment
    realises an outcome from the pulled arm's law and the round's uniform ``u_t`` by inverse
    CDF (:meth:`realise`), and the agents that know the table (the offline model's
    ``emissions``) weigh states by ``O[s, a, o]`` (:meth:`outcome_log_likelihood`). The values
    are distinct, so that the outcome is known from the reward (:meth:`outcome`), and lie in
    ``[0, 1]``; model-free agents treat the rewards as Bernoulli's formulas treat rewards in
    ``[0, 1]`` (Beta Thompson sampling, binary divergences, scale ``1/2``). Bernoulli
    outcomes are ``values = (0, 1)``.
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
        ``(R, S, K, N)``; floored at :data:`SMALLEST_PROBABILITY`."""
        runs = np.arange(len(actions))
        laws = emissions[runs, :, actions, self.outcome(rewards)]  # (R, S)
        return np.log(np.maximum(laws, SMALLEST_PROBABILITY)).T


def _log_bernoulli(rewards: np.ndarray, means: np.ndarray) -> np.ndarray:
    """``log P(r)`` for ``r ~ Bernoulli(mu)``, ``r in {0, 1}``, floored at
    :data:`SMALLEST_PROBABILITY`."""
    probability = rewards * means + (1.0 - rewards) * (1.0 - means)
    return np.log(np.maximum(probability, SMALLEST_PROBABILITY))
