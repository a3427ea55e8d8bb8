"""Reward statistics shared between particles: a pool of slots per run, for umTS.

Resampled copies of a particle keep identical statistics, so each run keeps a pool of
``P = N · S`` statistics slots and every particle-state pair points to one (``slot``,
``(R, N, S)``), with reference counts
(``refs``, ``(R, P)``) and a stack of free slots (``free``, ``(R, P)``; ``n_free``,
``(R,)``). A reward family computes its predictive once per live slot; an update writes in
place when every reference to the slot moves with it, else into a fresh slot that the
updated particles share; resampling only moves references. ``P`` slots suffice: each
live slot holds at least one of the ``N · S`` references, and a slot is split only when
it holds two. Slots are taken lowest first, so the slots never used are never touched.
The numbers are those of one set of statistics per particle and state.
"""

from __future__ import annotations

import numpy as np

from nslb_cli.compiled.jit import jit

Arrays = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
"""``(slot, refs, free, n_free)``, as the kernels take them."""


class SlotPool:
    """The slot bookkeeping of ``runs`` runs of ``particles`` particles over ``states``
    states; every pair starts at its state's prior, slot ``s``."""

    def __init__(self, runs: int, particles: int, states: int) -> None:
        P = particles * states
        self.slot = np.tile(np.arange(states), (runs, particles, 1))
        self.refs = np.zeros((runs, P), dtype=np.int64)
        self.refs[:, :states] = particles
        self.free = np.tile(np.arange(P - 1, states - 1, -1), (runs, 1))  # lowest on top
        self.n_free = np.full(runs, P - states)

    @property
    def arrays(self) -> Arrays:
        return self.slot, self.refs, self.free, self.n_free

    def gather(self, values: np.ndarray) -> np.ndarray:
        """``values[r, slot[r, i, s]]`` for every pair: ``(R, N, S, …)`` from ``(R, P, …)``."""
        return values[np.arange(len(self.slot))[:, None, None], self.slot]


@jit
def live_slots(r: int, refs: np.ndarray, out: np.ndarray) -> int:
    """Write the slots of run ``r`` that hold references into ``out``; return their number."""
    count = 0
    for p in range(refs.shape[1]):
        if refs[r, p] > 0:
            out[count] = p
            count += 1
    return count


@jit
def plan_updates(
    r: int,
    pool: Arrays,
    states: np.ndarray,
    informative: np.ndarray,
    moving: np.ndarray,
    moved: np.ndarray,
    sources: np.ndarray,
    targets: np.ndarray,
) -> int:
    """Point every particle ``i`` of run ``r`` at the slot that will hold its statistics of
    state ``states[r, i]`` once ``R_t`` is added, and return the number ``U`` of slot
    updates: slot ``targets[u]`` must become slot ``sources[u]`` plus ``R_t`` (the same
    slot when updated in place). Slots where ``informative`` is false (``R_t`` leaves them
    unchanged, e.g. a known model) keep their references. ``moving`` (zeros) and ``moved``
    (-1) are scratch arrays of one entry per slot, restored on return."""
    slot, refs, free, n_free = pool
    N = slot.shape[1]
    for i in range(N):
        moving[slot[r, i, states[r, i]]] += 1
    count = 0
    for i in range(N):
        p = slot[r, i, states[r, i]]
        if not informative[p]:
            continue
        if moved[p] < 0:
            q = p
            if moving[p] < refs[r, p]:
                n_free[r] -= 1
                q = free[r, n_free[r]]
                refs[r, p] -= moving[p]
                refs[r, q] = moving[p]
            moved[p] = q
            sources[count] = p
            targets[count] = q
            count += 1
        slot[r, i, states[r, i]] = moved[p]
    for u in range(count):
        moving[sources[u]] = 0
        moved[sources[u]] = -1
    for i in range(N):
        moving[slot[r, i, states[r, i]]] = 0
    return count


@jit
def gather_weights(
    r: int,
    slot: np.ndarray,
    particles: np.ndarray,
    states: np.ndarray,
    weights: np.ndarray,
    first: np.ndarray,
    second: np.ndarray,
    touched: np.ndarray,
) -> int:
    """Add ``w_m`` and ``w_m^2`` to ``first`` and ``second`` (zero on entry, one entry per
    slot) at the slot of particle ``particles[r, m]`` in state ``states[r, m]``; write the
    slots touched into ``touched`` and return their number (the caller zeroes them)."""
    count = 0
    for m in range(particles.shape[1]):
        w = weights[r, m]
        if w == 0.0:
            continue
        p = slot[r, particles[r, m], states[r, m]]
        if first[p] == 0.0:
            touched[count] = p
            count += 1
        first[p] += w
        second[p] += w * w
    return count


@jit
def move_references(r: int, pool: Arrays, ancestors: np.ndarray) -> None:
    """Resampling of run ``r``: particle ``i`` takes the slots of ``ancestors[i]``; slots
    left without references return to the free stack."""
    slot, refs, free, n_free = pool
    for i in range(slot.shape[1]):
        a = ancestors[i]
        if a == i:
            continue
        for s in range(slot.shape[2]):
            old, new = slot[r, i, s], slot[r, a, s]
            refs[r, new] += 1
            refs[r, old] -= 1
            if refs[r, old] == 0:
                free[r, n_free[r]] = old
                n_free[r] += 1
            slot[r, i, s] = new
