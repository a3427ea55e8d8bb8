"""Offline models learned from logged interactions (``env.model=learned``; docs/design.md §3.1,
§3.5), as Hong et al. (2021) assume for mTS and umTS.

For each seed the world's own true model logs ``rounds`` rounds under the uniform logging
policy, in sequences of ``sequence`` rounds (the last one shorter when it does not divide):

    S_1 ~ U{0..S-1},  S_{t+1} ~ P[S_t],  A_t ~ U{0..K-1},
    R_t = mu(A_t, S_t) + sigma eps_t  (Gaussian),  1[u_t < mu(A_t, S_t)]  (Bernoulli),
    o_t ~ O[S_t, A_t, ·]  (categorical outcomes; the logs hold the index o_t),

every number from the seed's ``Stream.OFFLINE``, so the online world (true parameters, path,
noise) is the known model's. Baum–Welch (``nslb_cli.learning.fit``) fits the logs, and the
agents are told ``nslb_cli.learning.posterior`` of the fit: its means and transitions as the
point estimate (mTS), its ``mean_sd`` and Dirichlet ``concentration`` as the prior (umTS).
A seed's logs are made, fitted and dropped before the next seed's are made.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from nslb_cli.bandit.problem import FLOAT, OfflineModel, Sizes
from nslb_cli.bandit.rewards import Bernoulli, Categorical, RewardModel
from nslb_cli.bandit.rng import Stream, categorical, generator
from nslb_cli.learning import Logs, Posterior, align_states, estimation_errors, fit, posterior

SUMMARY = ("fit_log_likelihood", "fit_iterations", "fit_restarts", "fit_mean_error",
           "fit_transition_error")  # fmt: skip
"""The statistics of each seed's fit, in ``seed=K.json``: the final log-likelihood of the
logs, EM's iterations and restarts, and the RMS errors of the emission and of ``P`` after the
fitted states are matched to the true ones."""


@dataclass(frozen=True)
class Logging:
    """How much is logged, and how many EM restarts fit it (``env.offline_*``)."""

    rounds: int
    sequence: int
    restarts: int

    @classmethod
    def of(cls, p: Any) -> Logging:
        """The logging of an environment's parameters ``p`` (its ``offline_*``)."""
        return cls(p.offline_rounds, p.offline_sequence, p.offline_restarts)


def memory(p: Any, sizes: Sizes) -> dict[str, int]:
    """An environment's memory declaration under ``model=learned`` (none otherwise): a lower
    bound of the bytes one seed's logs and their fit hold at once (one seed at a time,
    whatever the batch), the logged arms and rewards and EM's log-emission of every round and
    state, ``8 (2 + S)`` bytes a round (drawing the logs holds about 8 arrays of a number a
    round for a moment; EM's temporaries are not counted)."""
    if p.model != "learned":
        return {}
    return {"env.offline_rounds": p.offline_rounds * (2 + sizes.n_states) * FLOAT}


def emission_of(reward: RewardModel) -> str:
    """The emission family that ``nslb_cli.learning.fit`` fits for rewards of ``reward``."""
    if isinstance(reward, Categorical):
        return "categorical"
    return "bernoulli" if isinstance(reward, Bernoulli) else "gaussian"


def draw_logs(
    transitions: np.ndarray,
    emission: np.ndarray,
    reward: RewardModel,
    logging: Logging,
    rng: np.random.Generator,
) -> Logs:
    """Logs of ``logging.rounds`` rounds of the chain ``transitions`` (``(S, S)``) under the
    uniform logging policy (module docstring); ``emission``: the true means ``(S, K)``, or
    the outcome laws ``O`` ``(S, K, N)`` of categorical rewards."""
    S, K = emission.shape[:2]
    T = min(logging.sequence, logging.rounds)
    M = -(-logging.rounds // T)
    lengths = np.full(M, T, dtype=np.int64)
    lengths[-1] = logging.rounds - (M - 1) * T
    first = np.floor(rng.random(M) * S).astype(np.int64)
    moves = rng.random((M, T))  # moves[:, t] drives the move into round t
    arms = np.floor(rng.random((M, T)) * K).astype(np.int64)
    noise = reward.noise(rng, M * T).reshape(M, T)
    states = np.empty((M, T), dtype=np.int64)
    states[:, 0] = first
    for t in range(1, T):
        states[:, t] = categorical(transitions[states[:, t - 1]], moves[:, t])
    pulled = emission[states, arms]
    if isinstance(reward, Categorical):
        rewards = categorical(pulled, noise).astype(float)  # the outcome's index
    else:
        rewards = reward.realise(pulled, noise)
    logged = np.arange(T) < lengths[:, None]
    return Logs(np.where(logged, arms, 0), np.where(logged, rewards, 0.0), lengths)


@dataclass(frozen=True)
class _Learnt:
    """One seed's learned model: the posterior, relabelled to the true states, the expected
    rewards ``(S, K)`` it implies, and the fit's statistics (``SUMMARY``)."""

    posterior: Posterior
    means: np.ndarray
    statistics: dict[str, float]


def learn(
    seed: int,
    transitions: np.ndarray,
    emission: np.ndarray,
    reward: RewardModel,
    logging: Logging,
) -> _Learnt:
    """The offline model learned for ``seed`` from logs of its true model (``transitions``
    ``(S, S)`` and ``emission``, as ``draw_logs``)."""
    rng = generator(seed, Stream.OFFLINE)
    em_seed = int(rng.integers(2**63 - 1))  # first: the same EM starts whatever is logged
    logs = draw_logs(transitions, emission, reward, logging, rng)
    S, K = emission.shape[:2]
    kind = emission_of(reward)
    n_outcomes = emission.shape[2] if kind == "categorical" else None
    fitted = fit(logs, S, K, kind, n_outcomes=n_outcomes, restarts=logging.restarts, seed=em_seed)
    learnt = posterior(fitted)
    # The fitted states are relabelled to match the true ones, for reporting only. EM's labels
    # are arbitrary and every agent treats states as exchangeable labels, so a relabelling
    # changes no agent's behaviour in law (at most which of its uniforms picks which state);
    # it makes the belief columns (belief, p_true_state) comparable with the true state.
    rows = learnt.means if learnt.outcomes is None else learnt.outcomes.reshape(S, -1)
    learnt = learnt.reordered(align_states(rows, emission.reshape(S, -1)))
    means = learnt.means
    if isinstance(reward, Categorical) and learnt.outcomes is not None:
        means = (learnt.outcomes * np.asarray(reward.values)).sum(axis=2)  # sum_o O[s, a, o] r[o]
    errors = estimation_errors(fitted.parameters, emission, transitions)
    statistics = {
        "fit_log_likelihood": float(fitted.log_likelihood[-1]),
        "fit_iterations": fitted.iterations,
        "fit_restarts": fitted.restarts,
        "fit_mean_error": errors["mean_error"],
        "fit_transition_error": errors["transition_error"],
    }
    return _Learnt(learnt, means, statistics)


def learned_models(
    seeds: np.ndarray,
    transitions: np.ndarray,
    emissions: np.ndarray,
    reward: RewardModel,
    logging: Logging,
) -> tuple[OfflineModel, dict[str, np.ndarray]]:
    """``learn`` for each of ``seeds`` (``transitions`` ``(R, S, S)``, ``emissions`` ``(R, S,
    K)`` or ``(R, S, K, N)``): the models stacked along the runs axis, and each statistic
    ``(R,)`` for ``World.summary``."""
    learnt = [
        learn(int(seed), P, E, reward, logging)
        for seed, P, E in zip(seeds, transitions, emissions, strict=True)
    ]
    posteriors = [one.posterior for one in learnt]
    outcomes = [p.outcomes for p in posteriors if p.outcomes is not None]
    model = OfflineModel(
        means=np.stack([one.means for one in learnt]),
        mean_sd=np.stack([p.mean_sd for p in posteriors]),
        transitions=np.stack([p.transitions for p in posteriors]),
        concentration=np.stack([p.concentration for p in posteriors]),
        initial=np.stack([p.initial for p in posteriors]),
        emissions=np.stack(outcomes) if outcomes else None,
    )
    summary = {key: np.array([one.statistics[key] for one in learnt]) for key in SUMMARY}
    return model, summary
