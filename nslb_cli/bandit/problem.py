"""What an agent is told: the problem's shape, the offline model, and (reference agents only)
the truth; for a batch of runs. And a batch's ``Sizes``, which memory estimates are
computed from before anything is built.

All arrays carry a leading runs axis ``R``; ``S`` latent states, ``K`` arms.

Two models of the mean reward share one interface, ``OfflineModel.expected_rewards``:

* multi-armed (no context): ``mu(a, s) = means[s, a]``, with an independent prior of
  standard deviation ``mean_sd[s, a]`` around it;
* linear (contexts ``X_t`` of shape ``(K, d)``): ``mu(a, X_t, s) = X_t[a] · means[s]``,
  with a Gaussian prior of covariance ``covariance[s]`` around ``means[s]``.

With zero prior spread the model is *known*. Transitions likewise: a point estimate ``phi``
and, when uncertain, Dirichlet concentrations whose mean is ``phi``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nslb_cli.bandit.rewards import Gaussian, RewardModel


@dataclass(frozen=True)
class Problem:
    """The shape of the problem, known to every agent (model-based or not).

    Attributes:
        sigma: the sub-Gaussian scale of the reward noise, ``reward_model.scale``: the noise
            standard deviation of Gaussian rewards, ``1/2`` for rewards in ``[0, 1]``.
        reward_model: the reward likelihood and its conjugate prior
            (``nslb_cli.bandit.rewards``); Gaussian with standard deviation ``sigma`` when not
            given.
    """

    n_arms: int
    n_states: int
    horizon: int
    sigma: float
    n_runs: int
    reward_model: RewardModel = None  # type: ignore[assignment]  # see __post_init__

    def __post_init__(self) -> None:
        if self.reward_model is None:
            object.__setattr__(self, "reward_model", Gaussian(self.sigma))
        elif self.reward_model.scale != self.sigma:
            raise ValueError(
                f"Problem.sigma ({self.sigma}) must be the reward model's scale "
                f"({self.reward_model.scale})"
            )


FLOAT = 8
"""Bytes of one entry of a float64 or int64 array."""


@dataclass(frozen=True)
class Sizes:
    """The sizes of one batch of runs, known before anything is built: what memory estimates
    are computed from (``nslb_cli.runner.memory``).

    Attributes:
        n_runs: ``R``, the runs (seeds) of the batch (``run.batch_size`` at most).
        horizon: ``n``, the rounds (``env.horizon``).
        n_arms: ``K``, the arms of a round (``env.n_arms``).
        n_states: ``S``, the latent states (``env.n_states``).
        n_features: ``d``, the dimension of a context vector; 0 without contexts.
        features_key: the config key that sets ``d`` (MovieLens: ``env.rank``); needed
            when ``d > 0``, so that a memory term growing with ``d`` can name it.
    """

    n_runs: int
    horizon: int
    n_arms: int
    n_states: int
    n_features: int = 0
    features_key: str = ""

    def __post_init__(self) -> None:
        if self.n_features and not self.features_key:
            raise ValueError("Sizes with n_features > 0 need the features_key that sets it")


@dataclass(frozen=True)
class OfflineModel:
    """What the model-based agents are given (docs/design.md §3).

    Attributes:
        means: ``(R, S, K)`` point estimate of ``mu(a, s)`` (the prior mean); for a linear
            model ``(R, S, d)``, the reward parameter ``theta_s`` of each state.
        mean_sd: ``(R, S, K)`` prior standard deviation of ``mu(a, s)``; 0 where known
            (multi-armed models only).
        transitions: ``(R, S, S)`` point estimate of ``phi`` (rows sum to one).
        concentration: ``(R, S, S)`` Dirichlet prior on the rows of ``phi``
            (``phi_s ~ Dir(concentration[s])``), or ``None`` when ``phi`` is known.
        initial: ``(R, S)`` distribution of the first latent state ``P_1``.
        covariance: ``(R, S, d, d)`` prior covariance of ``theta_s`` (linear models only).
        ar_coefficients: ``(R, k)`` for a continuous latent ``z_t`` that follows an AR(k)
            process (``env=latent_ar``, docs/design.md §3.4): ``gamma_1 … gamma_k`` in
            ``z_t = sum_i gamma_i z_{t-i} + eta_t``; ``None`` for a discrete latent chain.
            Such a model has one nominal state: ``means[:, 0]`` is ``mu_a``, and the mean
            reward of arm ``a`` is ``mu_a + beta_a z_t``.
        ar_loadings: ``(R, K)`` ``beta_a`` (with ``ar_coefficients``).
        ar_noise_sd: ``(R,)`` ``sigma_z``, the standard deviation of ``eta_t``.
        ar_initial_sd: ``(R,)`` the standard deviation of each of ``z_0 … z_{k-1}``
            (independent, mean 0), which hold in the first ``k`` rounds.
        emissions: ``(R, S, K, N)`` the known observation model ``O[s, a, ·]`` of categorical
            outcomes (``Categorical``); ``means`` are then the
            expected rewards ``sum_o O[s, a, o] r[o]``. ``None`` otherwise.
    """

    means: np.ndarray
    mean_sd: np.ndarray
    transitions: np.ndarray
    concentration: np.ndarray | None
    initial: np.ndarray
    covariance: np.ndarray | None = None
    ar_coefficients: np.ndarray | None = None
    ar_loadings: np.ndarray | None = None
    ar_noise_sd: np.ndarray | None = None
    ar_initial_sd: np.ndarray | None = None
    emissions: np.ndarray | None = None

    @property
    def linear(self) -> bool:
        return self.covariance is not None

    @property
    def autoregressive(self) -> bool:
        """Whether the latent is a continuous AR process (the ``ar_*`` fields are given)."""
        return self.ar_coefficients is not None

    def expected_rewards(self, contexts: np.ndarray | None) -> np.ndarray:
        """``mu(a, X_t, s)`` under the point estimate, shape ``(R, S, K)``.

        Multi-armed: ``means`` itself. Linear: ``X_t[a] · theta_s`` for contexts ``(R, K, d)``,
        one ``(S, d) × (d, K)`` product per run, so a run's numbers do not depend on its batch.
        """
        if contexts is None:
            return self.means
        return self.means @ np.swapaxes(contexts, -1, -2)


@dataclass(frozen=True)
class Truth:
    """The one narrow view of a world's truth that an agent declaring ``sees_truth`` is given.

    Attributes:
        states: ``(R, n)`` the true latent state ``S_t``.
        mean_rewards: ``(R, n, K)`` ``mu(a, X_t, S_t; theta*)`` of every arm.
    """

    states: np.ndarray
    mean_rewards: np.ndarray
