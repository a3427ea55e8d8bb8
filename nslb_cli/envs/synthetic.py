"""The synthetic non-stationary multi-armed latent bandit of the paper's section 5.1
(docs/design.md §3.1).

``K`` arms, ``S`` latent states; Gaussian or Bernoulli rewards (``nslb_cli.bandit.rewards``).

Latent dynamics:
    * ``fixed``: ``S_1`` uniform; the state changes exactly every ``period`` rounds, to a
      state drawn uniformly among the other ``S - 1``.
    * ``markov``: ``S_1`` uniform, ``S_t ~ phi[S_{t-1}]``.

Offline model given to the agents:
    * ``known``: true ``mu(a, s) ~ U(0, 1)``; the true transition matrix (for ``markov``:
      stay with ``1 - switch_prob``, else move uniformly; for ``fixed``: the same form with
      switch probability ``1 / period``).
    * ``prior``: prior means ``mu0(a, s) ~ U(0, 1)`` and true means drawn from the reward
      model's conjugate prior around them (``prior_sd``, or ``c = prior_strength`` for
      Bernoulli); agents are told ``mu0`` and ``mean_sd``. True rows ``phi_s ~ Dir(alpha_s)``
      with ``alpha_ss = stay_concentration`` and ``move_concentration`` elsewhere; with
      ``fixed`` dynamics the path ignores ``phi`` and the agents still get this prior.
    * ``learned``: the known model's truth (``markov`` dynamics only); agents are told what EM
      learned from logs of it (``nslb_cli.envs.learned``), the fit's statistics go to
      ``seed=K.json``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from nslb_cli.bandit.problem import OfflineModel, Problem
from nslb_cli.bandit.rewards import Bernoulli, Gaussian, RewardModel
from nslb_cli.bandit.rng import Stream, categorical, generator
from nslb_cli.bandit.world import World
from nslb_cli.common import validators as check
from nslb_cli.envs import learned

MIN_SIGMA = 1e-6
MODELS = ("known", "prior", "learned")  # what agents are told: the truth, priors, EM's fit
MIN_CONCENTRATION = 0.01  # below it, Gamma(alpha) draws underflow to 0 with real probability


@dataclass
class SyntheticParams(check.Section):
    """Parameters of ``env=synthetic``; defaults are the paper's."""

    scales = ("sigma", "prior_sd")
    added_later = ("offline_rounds", "offline_sequence", "offline_restarts")

    name: str = "synthetic"
    dynamics: str = "markov"
    model: str = "known"
    reward: str = "gaussian"
    n_arms: int = 5
    n_states: int = 5
    horizon: int = 2000
    sigma: float = 0.5
    period: int = 200
    switch_prob: float = 0.005
    prior_sd: float = 0.2
    prior_strength: float = 3.0
    stay_concentration: float = 796.0
    move_concentration: float = 1.0
    offline_rounds: int = 10000
    offline_sequence: int = 100
    offline_restarts: int = 3

    def validate(self) -> None:
        check.one_of(self.dynamics, ("fixed", "markov"), "dynamics")
        check.one_of(self.model, MODELS, "model")
        check.require(
            self.model != "learned" or self.dynamics == "markov",
            "model",
            "learned needs dynamics=markov: a fixed schedule is not a chain to learn",
        )
        check.one_of(self.reward, REWARDS, "reward")
        check.require(self.n_arms >= 2, "n_arms", f"must be >= 2, got {self.n_arms}")
        check.require(self.n_states >= 2, "n_states", f"must be >= 2, got {self.n_states}")
        check.positive(self.horizon, "horizon")
        check.at_least(self.sigma, MIN_SIGMA, "sigma", "smaller noise underflows likelihoods")
        check.positive(self.period, "period")
        check.probability(self.switch_prob, "switch_prob")
        check.non_negative(self.prior_sd, "prior_sd")
        # prior_strength c: with both Beta shapes c mu0 and c (1 - mu0) tiny, numba's Beta
        # sampler (umTS's) retries until a draw does not underflow to 0/0, about a million
        # times a draw at c = 1e-9 (a hang; none to speak of at 0.01); at c = 1e-300 the
        # agents' prior strength m (1 - m) / sd^2 - 1 rounds to 0, an improper prior.
        for key in ("prior_strength", "stay_concentration", "move_concentration"):
            value = getattr(self, key)
            check.at_least(value, MIN_CONCENTRATION, key, "Gamma draws underflow")
        for key in ("offline_rounds", "offline_sequence", "offline_restarts"):
            check.positive(getattr(self, key), key)


REWARDS: dict[str, Callable[[SyntheticParams], tuple[RewardModel, float]]] = {
    "gaussian": lambda p: (Gaussian(p.sigma), p.prior_sd),
    "bernoulli": lambda p: (Bernoulli(), p.prior_strength),
}
"""``env.reward`` -> the reward model and the parameter of the prior on the true means in
that model's units (``draw_means``)."""


def uniform_switching(n_states: int, switch_prob: float) -> np.ndarray:
    """Transition matrix: stay with ``1 - p``, else move uniformly to one of the others."""
    move = switch_prob / (n_states - 1)
    return np.full((n_states, n_states), move) + np.eye(n_states) * (1.0 - switch_prob - move)


@dataclass(frozen=True)
class _Realisation:
    """One seed's true parameters and what its agents are told."""

    true_means: np.ndarray
    true_transitions: np.ndarray
    model: OfflineModel


class Synthetic:
    """Synthetic latent bandit: K arms, S latent states, uniform means (Hong et al., 2021,
    section 5.1)."""

    Params = SyntheticParams
    contextual = False

    @staticmethod
    def true_model(p: SyntheticParams) -> bool:
        """Agents are told the true means and chain: ``model=known`` with ``markov`` dynamics
        (``fixed`` dynamics change state on a schedule that no chain of theirs describes)."""
        return p.model == "known" and p.dynamics == "markov"

    memory = staticmethod(learned.memory)  # model=learned: one seed's logs and fit at a time

    @staticmethod
    def build(p: SyntheticParams, seeds: np.ndarray) -> World:
        """A world for ``seeds``; seed ``k``'s realisation depends only on ``p`` and ``k``."""
        seeds = np.asarray(seeds, dtype=np.int64)
        S, K, n = p.n_states, p.n_arms, p.horizon
        reward = REWARDS[p.reward](p)[0]
        draws = [_draw_parameters(p, int(s)) for s in seeds]
        true_means = np.stack([d.true_means for d in draws])  # (R, S, K)
        true_phi = np.stack([d.true_transitions for d in draws])  # (R, S, S)
        states = _latent_path(p, seeds, true_phi)  # (R, n)
        noise = np.stack([reward.noise(generator(s, Stream.NOISE), n) for s in seeds])
        mean_rewards = np.take_along_axis(true_means, states[:, :, None], axis=1)  # (R, n, K)
        if p.model == "learned":  # the fits' statistics go to seed=K.json
            offline, summary = learned.learned_models(
                seeds, true_phi, true_means, reward, learned.Logging.of(p)
            )
        else:
            offline, summary = _told(draws, S), {}
        problem = Problem(
            n_arms=K,
            n_states=S,
            horizon=n,
            sigma=reward.scale,
            n_runs=len(seeds),
            reward_model=reward,
        )
        return World(problem, seeds, states, mean_rewards, noise, offline, summary=summary)


def _told(draws: list[_Realisation], n_states: int) -> OfflineModel:
    """The seeds' offline models (``known`` or ``prior``) stacked along the runs axis."""
    models = [d.model for d in draws]
    return OfflineModel(
        means=np.stack([m.means for m in models]),
        mean_sd=np.stack([m.mean_sd for m in models]),
        transitions=np.stack([m.transitions for m in models]),
        concentration=_stacked([m.concentration for m in models]),
        initial=np.full((len(models), n_states), 1.0 / n_states),
    )


def _stacked(arrays: list[np.ndarray | None]) -> np.ndarray | None:
    """The seeds' arrays stacked, or ``None`` when the model has none (known transitions)."""
    present = [a for a in arrays if a is not None]
    return np.stack(present) if present else None


def _draw_parameters(p: SyntheticParams, seed: int) -> _Realisation:
    """True means and transitions of one seed, and the offline model its agents get."""
    rng = generator(seed, Stream.PARAMETERS)
    S, K = p.n_states, p.n_arms
    prior_means = rng.uniform(0.0, 1.0, (S, K))
    given_phi = uniform_switching(S, 1.0 / p.period if p.dynamics == "fixed" else p.switch_prob)
    alpha: np.ndarray | None = None  # the Dirichlet prior of the rows of phi (unknown phi)
    true_means, true_phi, mean_sd, phi_hat = prior_means, given_phi, np.zeros((S, K)), given_phi
    if p.model == "prior":
        reward, prior_parameter = REWARDS[p.reward](p)
        true_means = reward.draw_means(prior_means, prior_parameter, rng)
        alpha = np.full((S, S), p.move_concentration)
        np.fill_diagonal(alpha, p.stay_concentration)
        true_phi = np.stack([rng.dirichlet(row) for row in alpha])
        mean_sd = reward.prior_sd(prior_means, prior_parameter)
        phi_hat = alpha / alpha.sum(axis=1, keepdims=True)
    model = OfflineModel(
        means=prior_means,
        mean_sd=mean_sd,
        transitions=phi_hat,
        concentration=alpha,
        initial=np.full(S, 1.0 / S),
    )
    return _Realisation(true_means, true_phi, model)


def _latent_path(p: SyntheticParams, seeds: np.ndarray, true_phi: np.ndarray) -> np.ndarray:
    """``S_1..S_n`` for every seed, shape ``(R, n)``; one uniform per seed and round."""
    S, n = p.n_states, p.horizon
    rngs = [generator(int(s), Stream.PATH) for s in seeds]
    first = np.array([g.integers(S) for g in rngs])
    uniforms = np.stack([g.random(n) for g in rngs])  # u[:, t] drives the move into round t
    states = np.empty((len(seeds), n), dtype=np.int64)
    states[:, 0] = first
    runs = np.arange(len(seeds))
    for t in range(1, n):
        prev = states[:, t - 1]
        if p.dynamics == "fixed":
            if t % p.period == 0:
                offset = np.floor(uniforms[:, t] * (S - 1)).astype(np.int64)
                states[:, t] = (prev + 1 + offset) % S
            else:
                states[:, t] = prev
        else:
            states[:, t] = categorical(true_phi[runs, prev], uniforms[:, t])
    return states
