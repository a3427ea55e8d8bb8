"""One round of umTS's particle-filter update, written once for every family of reward
posterior (docs/design.md §4.2; the paper's equations (3)-(4)).

Per run, after observing ``(A_t, X_t, R_t)``:

1. the posterior predictive of ``R_t`` under every live slot of reward statistics
   (``pool``), as ``p(R_t | slot) = c · scale · exp(exponent)``,
   and whether ``R_t`` would change that slot (``informative``);
2. the latent step (``propose``): transitions drawn, every
   particle's weight multiplied by its predictive likelihood, ``B_t^i`` proposed;
3. the slot updates the pool plans (``plan_updates``): a slot
   copied where particles part ways, then ``R_t`` added to it;
4. resampling when the effective sample size falls below ``threshold · N``
   (``resample``), the pool's references following.

Steps 1 and 3 are the family's: ``predictives`` and ``learn`` (with ``observe``
and ``work_arrays``), one implementation per family chosen by numba from the type of the
statistics (``numba.extending.overload``: 4-D ``second`` means the linear family) and inlined
into ``step``, which numba compiles and caches once per family. The families:

* per-arm conjugate posteriors (``arm_posterior``; no contexts):
  statistics ``first`` and ``second``, two ``(R, P, K)`` arrays in the reward model's
  parameterisation; ``(family, parameter)`` select the reward model's compiled formulas
  (``nslb_cli.bandit.reward_kernels``); the observation is the arm ``a``;
* Bayesian linear regression (``linear_posterior``; contexts):
  ``first`` the means ``(R, P, d)`` and ``second`` the covariances ``(R, P, d, d)``;
  ``parameter`` is ``sigma^2``; the observation is the pulled arm's features ``x =
  X_t[A_t]``, and ``y = C x``, ``x' m`` and ``x' C x`` per slot are kept from step 1 for
  step 3 (the work arrays ``y``, ``centre``, ``spread``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import types
from numba.extending import overload
from numba.typed import List

from nslb_cli.agents.umts import latent
from nslb_cli.agents.umts.pool import Arrays, SlotPool, live_slots, move_references, plan_updates
from nslb_cli.bandit import reward_kernels as rk
from nslb_cli.bandit.rng import BatchRNG
from nslb_cli.compiled.jit import jit

Statistics = tuple[np.ndarray, np.ndarray]
"""A family's statistics per run and slot: ``(first, second)``."""
Work = tuple[np.ndarray, np.ndarray, np.ndarray]
"""A family's per-slot work arrays: ``(y, centre, spread)``."""


def observe(second: np.ndarray, contexts: Any, actions: np.ndarray, r: int) -> Any:
    """What run ``r`` observed of its pull: the arm, or the arm's features ``X_t[A_t]``."""
    raise NotImplementedError("compiled only")


def work_arrays(first: np.ndarray, second: np.ndarray) -> Work:
    """The family's per-slot work arrays ``(y, centre, spread)`` (empty for arms)."""
    raise NotImplementedError("compiled only")


def predictives(
    first: np.ndarray,
    second: np.ndarray,
    work: Work,
    r: int,
    slots: np.ndarray,
    seen: Any,
    reward: float,
    family: int,
    parameter: float,
    exponent: np.ndarray,
    scale: np.ndarray,
    informative: np.ndarray,
) -> None:
    """Step 1 for run ``r``: ``exponent``, ``scale`` and ``informative`` of every slot in
    ``slots``."""
    raise NotImplementedError("compiled only")


def learn(
    first: np.ndarray,
    second: np.ndarray,
    work: Work,
    r: int,
    sources: np.ndarray,
    targets: np.ndarray,
    seen: Any,
    reward: float,
    family: int,
    parameter: float,
) -> None:
    """Step 3 for run ``r``: each slot ``targets[u]``, a copy of slot ``sources[u]`` (the
    same slot when updated in place), takes the reward."""
    raise NotImplementedError("compiled only")


def _linear(second: types.Array) -> bool:
    """Whether numba type ``second`` is the linear family's (covariance matrices per slot)."""
    return bool(second.ndim == 4)


@overload(observe, inline="always")
def _observe(second: Any, contexts: Any, actions: Any, r: Any) -> Any:
    if _linear(second):

        def features(second: Any, contexts: Any, actions: Any, r: Any) -> Any:
            return contexts[r, actions[r]]

        return features

    def arm(second: Any, contexts: Any, actions: Any, r: Any) -> Any:
        return actions[r]

    return arm


@overload(work_arrays)
def _work_arrays(first: Any, second: Any) -> Any:
    if _linear(second):

        def linear(first: Any, second: Any) -> Any:
            P, d = first.shape[1], first.shape[2]
            return np.empty((P, d)), np.empty(P), np.empty(P)

        return linear

    def arm(first: Any, second: Any) -> Any:
        return np.empty((0, 0)), np.empty(0), np.empty(0)

    return arm


@overload(predictives, inline="always")
def _predictives(
    first: Any,
    second: Any,
    work: Any,
    r: Any,
    slots: Any,
    seen: Any,
    reward: Any,
    family: Any,
    parameter: Any,
    exponent: Any,
    scale: Any,
    informative: Any,
) -> Any:
    if _linear(second):

        def linear(
            first: Any,
            second: Any,
            work: Any,
            r: Any,
            slots: Any,
            seen: Any,
            reward: Any,
            family: Any,
            parameter: Any,
            exponent: Any,
            scale: Any,
            informative: Any,
        ) -> Any:
            """``N(R_t; x' m, x' C x + sigma^2)`` with ``x = seen``; ``y = C x`` is computed
            as ``sum_k x_k C[k, :]`` (``C`` symmetric)."""
            y, centre, spread = work
            d = first.shape[2]
            for p in slots:
                y[p] = 0.0
                for k in range(d):
                    for j in range(d):
                        y[p, j] += seen[k] * second[r, p, k, j]
                centre[p] = 0.0
                spread[p] = 0.0
                for j in range(d):
                    centre[p] += seen[j] * first[r, p, j]
                    spread[p] += seen[j] * y[p, j]
                v = spread[p] + parameter
                exponent[p] = -0.5 * (reward - centre[p]) * (reward - centre[p]) / v
                scale[p] = 1.0 / np.sqrt(v)
                informative[p] = spread[p] > 0.0

        return linear

    def arm(
        first: Any,
        second: Any,
        work: Any,
        r: Any,
        slots: Any,
        seen: Any,
        reward: Any,
        family: Any,
        parameter: Any,
        exponent: Any,
        scale: Any,
        informative: Any,
    ) -> Any:
        """The reward model's predictive of arm ``a = seen`` (reward_kernels)."""
        for p in slots:
            exponent[p], scale[p] = rk.predictive(
                family, parameter, reward, first[r, p, seen], second[r, p, seen]
            )
            informative[p] = rk.learns(family, second[r, p, seen])

    return arm


@overload(learn, inline="always")
def _learn(
    first: Any,
    second: Any,
    work: Any,
    r: Any,
    sources: Any,
    targets: Any,
    seen: Any,
    reward: Any,
    family: Any,
    parameter: Any,
) -> Any:
    if _linear(second):

        def linear(
            first: Any,
            second: Any,
            work: Any,
            r: Any,
            sources: Any,
            targets: Any,
            seen: Any,
            reward: Any,
            family: Any,
            parameter: Any,
        ) -> Any:
            """``m += y (r - x' m) / (x' y + sigma^2)``, ``C -= y y' / (x' y + sigma^2)``
            with the ``y``, ``x' m`` and ``x' y`` of the source slot (``predictives``);
            ``C`` stays exactly symmetric (``y_j y_k`` is the same product both ways)."""
            y, centre, spread = work
            d = first.shape[2]
            for u in range(len(sources)):
                p, q = sources[u], targets[u]
                if q != p:
                    first[r, q] = first[r, p]
                    second[r, q] = second[r, p]
                gain = 1.0 / (spread[p] + parameter)
                step = (reward - centre[p]) * gain
                for j in range(d):
                    first[r, q, j] += y[p, j] * step
                    for k in range(d):
                        second[r, q, j, k] -= y[p, j] * y[p, k] * gain

        return linear

    def arm(
        first: Any,
        second: Any,
        work: Any,
        r: Any,
        sources: Any,
        targets: Any,
        seen: Any,
        reward: Any,
        family: Any,
        parameter: Any,
    ) -> Any:
        """The reward model's conjugate update of arm ``a = seen`` (reward_kernels)."""
        for u in range(len(sources)):
            p, q = sources[u], targets[u]
            if q != p:
                first[r, q] = first[r, p]
                second[r, q] = second[r, p]
            first[r, q, seen], second[r, q, seen] = rk.update(
                family, parameter, reward, first[r, q, seen], second[r, q, seen]
            )

    return arm


@jit
def step(
    generators: List,
    log_weights: np.ndarray,
    previous: np.ndarray,
    counts: np.ndarray | None,
    started: bool,
    initial: np.ndarray,
    transitions: np.ndarray,
    first: np.ndarray,
    second: np.ndarray,
    pool: Arrays,
    contexts: np.ndarray | None,
    actions: np.ndarray,
    rewards: np.ndarray,
    family: int,
    parameter: float,
    threshold: float,
    scheme: int,
    resamples: np.ndarray,
) -> None:
    """Steps 1-4 of the module docstring for every run, in place."""
    R, P = first.shape[0], first.shape[1]
    slot, refs = pool[0], pool[1]
    N = slot.shape[1]
    live, exponent, scale, likelihood = np.empty(P, np.int64), np.empty(P), np.empty(P), np.empty(P)
    informative = np.empty(P, np.bool_)
    moving, moved = np.zeros(P, np.int64), np.full(P, -1)
    sources, targets = np.empty(N, np.int64), np.empty(N, np.int64)
    ancestors, weights = np.empty(N, np.int64), np.empty((R, N))
    work = work_arrays(first, second)
    for r in range(R):
        generator, seen, reward = generators[r], observe(second, contexts, actions, r), rewards[r]
        slots = live[: live_slots(r, refs, live)]
        predictives(first, second, work, r, slots, seen, reward, family, parameter,
                    exponent, scale, informative)  # fmt: skip
        latent.propose(r, generator, log_weights, previous, counts, started, initial, transitions,
                       slot, slots, exponent, scale, likelihood)  # fmt: skip
        updates = plan_updates(r, pool, previous, informative, moving, moved, sources, targets)
        learn(first, second, work, r, sources[:updates], targets[:updates], seen,
              reward, family, parameter)  # fmt: skip
        moved_particles = latent.resample(
            r, generator, log_weights, previous, counts, threshold, scheme, weights, ancestors
        )
        if moved_particles:
            resamples[r] += 1
            move_references(r, pool, ancestors)


class PooledPosterior:
    """What every family of umTS's reward posteriors shares: the pool of statistics slots and
    the round's update.

    Subclasses set ``stats`` (their statistics per run and slot, ``(first, second)`` of the
    module docstring) and ``model`` (the ``(family, parameter)`` pair their compiled formulas
    take), and draw the acting mixture (``sample_mixture``).
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
            *self.stats,
            self.pool.arrays,
            contexts,
            actions,
            rewards,
            *self.model,
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
