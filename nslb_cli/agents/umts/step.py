"""One round of umTS's particle-filter update, written once for every family of reward
posterior (docs/design.md §4.2; the paper's equations (3)-(4)).

Per run, after observing ``(A_t, X_t, R_t)``:

1. the posterior predictive of ``R_t`` under every live slot of reward statistics
   (:mod:`~nslb_cli.agents.umts.pool`), as ``p(R_t | slot) = c · scale · exp(exponent)``,
   and whether ``R_t`` would change that slot (``informative``);
2. the latent step (:func:`~nslb_cli.agents.umts.latent.propose`): transitions drawn, every
   particle's weight multiplied by its predictive likelihood, ``B_t^i`` proposed;
3. the slot updates the pool plans (:func:`~nslb_cli.agents.umts.pool.plan_updates`): a slot
   copied where particles part ways, then ``R_t`` added to it;
4. resampling when the effective sample size falls below ``threshold · N``
   (:func:`~nslb_cli.agents.umts.latent.resample`), the pool's references following.

Steps 1 and 3 are the family's: :func:`predictives` and :func:`learn` (with :func:`observe`
and :func:`scratch`), which have one implementation per family, chosen by numba from the
type of the statistics (``numba.extending.overload``: 4-D covariances mean the linear
family). numba compiles :func:`step` once per family, with that
family's code in place (the same machine code as two hand-written loops), and caches both on
disk; passing the family's functions as arguments instead would not be cached (numba
recompiles kernels that take functions in every process). The families:

* per-arm conjugate posteriors (:mod:`~nslb_cli.agents.umts.arm_posterior`; no contexts):
  ``stats = (first, second)``, two ``(R, P, K)`` arrays in the reward model's
  parameterisation; ``model = (family, parameter)``, the reward model's compiled twin
  (:mod:`nslb_cli.core.reward_kernels`); the observation is the arm ``a``;
* Bayesian linear regression (:mod:`~nslb_cli.agents.umts.linear_posterior`; contexts):
  ``stats = (mean, cov)``, ``(R, P, d)`` and ``(R, P, d, d)``; ``model = (family,
  sigma^2)``; the observation is the pulled arm's features ``x = X_t[A_t]``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import types
from numba.extending import overload
from numba.typed import List

from nslb_cli.agents.umts import latent
from nslb_cli.agents.umts.pool import Arrays, SlotPool, live_slots, move_references, plan_updates
from nslb_cli.core import reward_kernels as rk
from nslb_cli.core.compiled import jit
from nslb_cli.core.rng import BatchRNG

Statistics = tuple[np.ndarray, np.ndarray]
"""A family's statistics per run and slot: ``(first, second)`` or ``(mean, cov)``."""


def observe(stats: Statistics, contexts: Any, actions: np.ndarray, r: int) -> Any:
    """What run ``r`` observed of its pull: the arm, or the arm's features ``X_t[A_t]``."""
    raise NotImplementedError("compiled only")


def scratch(stats: Statistics) -> Any:
    """Per-slot work arrays of the family, ``(y, centre, spread)``."""
    raise NotImplementedError("compiled only")


def predictives(
    stats: Statistics,
    work: Any,
    r: int,
    slots: np.ndarray,
    seen: Any,
    reward: float,
    model: tuple[int, float],
    exponent: np.ndarray,
    scale: np.ndarray,
    informative: np.ndarray,
) -> None:
    """Step 1 for run ``r``: ``exponent``, ``scale`` and ``informative`` of every slot in
    ``slots``."""
    raise NotImplementedError("compiled only")


def learn(
    stats: Statistics,
    work: Any,
    r: int,
    p: int,
    q: int,
    seen: Any,
    reward: float,
    model: tuple[int, float],
) -> None:
    """Step 3 for run ``r``: slot ``q`` (a copy of slot ``p``) takes the reward."""
    raise NotImplementedError("compiled only")


def _linear(stats: types.BaseTuple) -> bool:
    """Whether numba type ``stats`` is the linear family's (covariance matrices per slot)."""
    return bool(stats.types[1].ndim == 4)


@overload(observe)
def _observe(stats: Any, contexts: Any, actions: Any, r: Any) -> Any:
    if _linear(stats):

        def features(stats: Any, contexts: Any, actions: Any, r: Any) -> Any:
            return contexts[r, actions[r]]

        return features

    def arm(stats: Any, contexts: Any, actions: Any, r: Any) -> Any:
        return actions[r]

    return arm


@overload(scratch)
def _scratch(stats: Any) -> Any:
    if not _linear(stats):

        def none(stats: Any) -> Any:
            return np.empty((0, 0)), np.empty(0), np.empty(0)

        return none

    def linear(stats: Any) -> Any:
        P, d = stats[0].shape[1], stats[0].shape[2]
        return np.empty((P, d)), np.empty(P), np.empty(P)

    return linear


@overload(predictives)
def _predictives(
    stats: Any,
    work: Any,
    r: Any,
    slots: Any,
    seen: Any,
    reward: Any,
    model: Any,
    exponent: Any,
    scale: Any,
    informative: Any,
) -> Any:
    if not _linear(stats):

        def arm(
            stats: Any,
            work: Any,
            r: Any,
            slots: Any,
            seen: Any,
            reward: Any,
            model: Any,
            exponent: Any,
            scale: Any,
            informative: Any,
        ) -> Any:
            """The reward model's predictive of arm ``a = seen`` (reward_kernels)."""
            first, second = stats
            family, parameter = model
            for p in slots:
                exponent[p], scale[p] = rk.predictive(
                    family, parameter, reward, first[r, p, seen], second[r, p, seen]
                )
                informative[p] = rk.learns(family, second[r, p, seen])

        return arm

    def linear(
        stats: Any,
        work: Any,
        r: Any,
        slots: Any,
        seen: Any,
        reward: Any,
        model: Any,
        exponent: Any,
        scale: Any,
        informative: Any,
    ) -> Any:
        """``N(R_t; x' m, x' C x + sigma^2)`` with ``x = seen``; ``y = C x`` is computed as
        ``sum_k x_k C[k, :]`` (``C`` symmetric) and kept for :func:`learn`."""
        mean, cov = stats
        y, centre, spread = work
        noise_var = model[1]
        d = mean.shape[2]
        for p in slots:
            y[p] = 0.0
            for k in range(d):
                for j in range(d):
                    y[p, j] += seen[k] * cov[r, p, k, j]
            centre[p] = 0.0
            spread[p] = 0.0
            for j in range(d):
                centre[p] += seen[j] * mean[r, p, j]
                spread[p] += seen[j] * y[p, j]
            v = spread[p] + noise_var
            exponent[p] = -0.5 * (reward - centre[p]) * (reward - centre[p]) / v
            scale[p] = 1.0 / np.sqrt(v)
            informative[p] = spread[p] > 0.0

    return linear


@overload(learn)
def _learn(
    stats: Any, work: Any, r: Any, p: Any, q: Any, seen: Any, reward: Any, model: Any
) -> Any:
    if not _linear(stats):

        def arm(
            stats: Any, work: Any, r: Any, p: Any, q: Any, seen: Any, reward: Any, model: Any
        ) -> Any:
            """The reward model's conjugate update of arm ``a = seen`` (reward_kernels)."""
            first, second = stats
            family, parameter = model
            first[r, q, seen], second[r, q, seen] = rk.update(
                family, parameter, reward, first[r, q, seen], second[r, q, seen]
            )

        return arm

    def linear(
        stats: Any, work: Any, r: Any, p: Any, q: Any, seen: Any, reward: Any, model: Any
    ) -> Any:
        """``m += y (r - x' m) / (x' y + sigma^2)``, ``C -= y y' / (x' y + sigma^2)`` with the
        ``y``, ``x' m`` and ``x' y`` of slot ``p`` (:func:`predictives`)."""
        mean, cov = stats
        y, centre, spread = work
        gain = 1.0 / (spread[p] + model[1])
        step = (reward - centre[p]) * gain
        for j in range(mean.shape[2]):
            mean[r, q, j] += y[p, j] * step
            for k in range(mean.shape[2]):
                cov[r, q, j, k] -= y[p, j] * y[p, k] * gain

    return linear


@jit
def step(
    generators: List,
    log_weights: np.ndarray,
    previous: np.ndarray,
    counts: np.ndarray | None,
    started: bool,
    initial: np.ndarray,
    transitions: np.ndarray,
    stats: Statistics,
    pool: Arrays,
    contexts: np.ndarray | None,
    actions: np.ndarray,
    rewards: np.ndarray,
    model: tuple[int, float],
    threshold: float,
    scheme: int,
    resamples: np.ndarray,
) -> None:
    """Steps 1-4 of the module docstring for every run, in place."""
    R, P = stats[0].shape[0], stats[0].shape[1]
    slot, refs = pool[0], pool[1]
    N = slot.shape[1]
    live, exponent, scale, likelihood = np.empty(P, np.int64), np.empty(P), np.empty(P), np.empty(P)
    informative = np.empty(P, np.bool_)
    moving, moved = np.zeros(P, np.int64), np.full(P, -1)
    sources, targets, ancestors = (
        np.empty(N, np.int64),
        np.empty(N, np.int64),
        np.empty(N, np.int64),
    )
    work = scratch(stats)
    for r in range(R):
        generator, seen, reward = generators[r], observe(stats, contexts, actions, r), rewards[r]
        slots = live[: live_slots(r, refs, live)]
        predictives(stats, work, r, slots, seen, reward, model, exponent, scale, informative)
        latent.propose(
            r,
            generator,
            log_weights,
            previous,
            counts,
            started,
            initial,
            transitions,
            slot,
            slots,
            exponent,
            scale,
            likelihood,
        )
        updates = plan_updates(r, pool, previous, informative, moving, moved, sources, targets)
        for u in range(updates):
            p, q = sources[u], targets[u]
            if q != p:
                stats[0][r, q] = stats[0][r, p]
                stats[1][r, q] = stats[1][r, p]
            learn(stats, work, r, p, q, seen, reward, model)
        if latent.resample(
            r, generator, log_weights, previous, counts, threshold, scheme, ancestors
        ):
            resamples[r] += 1
            move_references(r, pool, ancestors)


class PooledPosterior:
    """What every family of umTS's reward posteriors shares: the pool of statistics slots and
    the round's update.

    Subclasses set ``stats`` (their statistics per run and slot, the module docstring's
    ``(first, second)`` or ``(mean, cov)``) and ``model`` (the ``(family, parameter)`` pair
    their compiled formulas take), and draw the acting mixture (``sample_mixture``).
    """

    pool: SlotPool
    stats: Statistics
    model: tuple[int, float]

    def step(
        self,
        rng: BatchRNG,
        log_weights: np.ndarray,
        filter_state: latent.Latent,
        contexts: np.ndarray | None,
        actions: np.ndarray,
        rewards: np.ndarray,
        threshold: float,
        scheme: int,
        resamples: np.ndarray,
    ) -> None:
        """One update with ``(A_t, X_t, R_t)``, in place: the weights, the latent states and
        the statistics; resampling with ``SCHEMES[scheme]`` when the ESS is below
        ``threshold · N``, counted in ``resamples``. ``contexts`` (``None`` without
        context) is read by the linear family only."""
        step(
            rng.typed(),
            log_weights,
            *filter_state,
            self.stats,
            self.pool.arrays,
            contexts,
            actions,
            rewards,
            self.model,
            threshold,
            scheme,
            resamples,
        )

    def sample_mixture(
        self,
        rng: BatchRNG,
        particles: np.ndarray,
        states: np.ndarray,
        weights: np.ndarray,
        contexts: np.ndarray | None,
    ) -> np.ndarray:
        """A draw of ``sum_m w_m mu^{i_m}(a)`` per arm, ``(R, K)``, for particles ``i_m =
        particles[r, m]`` in states ``states[r, m]`` with weights ``w_m = weights[r, m]``."""
        raise NotImplementedError
