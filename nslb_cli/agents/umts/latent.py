"""The latent-state part of umTS's particle filter, compiled: transitions, weights, resampling.

Arrays (``R`` runs, ``N`` particles, ``S`` states): ``log_weights`` ``(R, N)``; ``previous``
``(R, N)`` the last state ``B_{t-1}^i``; ``counts`` ``(R, N, S, S)`` each particle's Dirichlet
posterior counts, or ``None`` when the transition matrix ``transitions`` ``(R, S, S)`` is
known; ``initial`` ``(R, S)`` is ``P_1``, used while ``started`` is false (first round).
"""

from __future__ import annotations

import numpy as np
from numba.typed import List

from nslb_cli.agents.umts.resampling import draw_ancestors
from nslb_cli.agents.umts.sampling import draw_each, normalise, standard_gammas
from nslb_cli.compiled.jit import inline, jit

HALF_LOG_TWO_PI = 0.5 * np.log(2.0 * np.pi)
UNDERFLOW = 600.0  # exp(-600) ~ 1e-261: far from underflow, even times phi and the scale

Latent = tuple[np.ndarray, "np.ndarray | None", bool, np.ndarray, np.ndarray]
"""``(previous, counts, started, initial, transitions)``, as the kernels take them."""


@jit
def _transition_rows(
    r: int,
    previous: np.ndarray,
    counts: np.ndarray | None,
    started: bool,
    initial: np.ndarray,
    transitions: np.ndarray,
    out: np.ndarray,
) -> None:
    """``out[i] = P(B_t = · | particle i)`` of run ``r``: ``P_1``, the known row
    ``phi[B_{t-1}^i]``, or the Dirichlet posterior mean ``counts[B_{t-1}^i] / sum``."""
    N, S = out.shape
    for i in range(N):
        p = previous[r, i]
        if not started:
            for s in range(S):
                out[i, s] = initial[r, s]
        elif counts is None:
            for s in range(S):
                out[i, s] = transitions[r, p, s]
        else:
            total = 0.0
            for s in range(S):
                total += counts[r, i, p, s]
            for s in range(S):
                out[i, s] = counts[r, i, p, s] / total


@inline
def _mix(r: int, weights: np.ndarray, rows: np.ndarray, posterior: np.ndarray) -> None:
    """For run ``r``, with the normalised weights ``w_i`` and each particle's ``P(B_t = · |
    i)`` (``rows``, ``(N, S)``): ``P(S_t = s | H_t) ≈ sum_i w_i P(B_t = s | i)``."""
    for i in range(rows.shape[0]):
        for s in range(rows.shape[1]):
            posterior[r, s] += weights[r, i] * rows[i, s]


@jit
def state_posterior(
    log_weights: np.ndarray,
    previous: np.ndarray,
    counts: np.ndarray | None,
    started: bool,
    initial: np.ndarray,
    transitions: np.ndarray,
) -> np.ndarray:
    """The particle estimate of ``P(S_t = s | H_t)`` before ``R_t``, ``(R, S)``; the same
    computation as the act kernels' (``act_states``, ``act_particle``)."""
    R, N = log_weights.shape
    S = initial.shape[1]
    weights = np.empty((R, N))
    rows = np.empty((N, S))
    posterior = np.zeros((R, S))
    for r in range(R):
        normalise(log_weights, r, weights)
        _transition_rows(r, previous, counts, started, initial, transitions, rows)
        _mix(r, weights, rows, posterior)
    return posterior


@jit
def act_states(
    generators: List,
    log_weights: np.ndarray,
    previous: np.ndarray,
    counts: np.ndarray | None,
    started: bool,
    initial: np.ndarray,
    transitions: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The weights ``(R, N)``, the state posterior ``(R, S)`` and every particle's
    ``B_t^i ~ P(· | i)`` ``(R, N)``: one uniform per particle."""
    R, N = log_weights.shape
    S = initial.shape[1]
    weights = np.empty((R, N))
    rows = np.empty((N, S))
    posterior = np.zeros((R, S))
    states = np.empty((R, N), dtype=np.int64)
    for r in range(R):
        normalise(log_weights, r, weights)
        _transition_rows(r, previous, counts, started, initial, transitions, rows)
        _mix(r, weights, rows, posterior)
        draw_each(rows, generators[r], states[r])
    return weights, posterior, states


@jit
def act_particle(
    generators: List,
    log_weights: np.ndarray,
    previous: np.ndarray,
    counts: np.ndarray | None,
    started: bool,
    initial: np.ndarray,
    transitions: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The state posterior ``(R, S)``, one particle ``j ~ w`` per run and its state
    ``B_t^j ~ P(· | j)``, ``(R,)`` each: two uniforms per run."""
    R, N = log_weights.shape
    S = initial.shape[1]
    weights = np.empty((R, N))
    rows = np.empty((N, S))
    posterior = np.zeros((R, S))
    chosen = np.empty(R, dtype=np.int64)
    states = np.empty(R, dtype=np.int64)
    for r in range(R):
        normalise(log_weights, r, weights)
        _transition_rows(r, previous, counts, started, initial, transitions, rows)
        _mix(r, weights, rows, posterior)
        draw_each(weights[r : r + 1], generators[r], chosen[r : r + 1])
        draw_each(rows[chosen[r] : chosen[r] + 1], generators[r], states[r : r + 1])
    return posterior, chosen, states


@jit
def propose(
    r: int,
    generator: np.random.Generator,
    log_weights: np.ndarray,
    previous: np.ndarray,
    counts: np.ndarray | None,
    started: bool,
    initial: np.ndarray,
    transitions: np.ndarray,
    slot: np.ndarray,
    live: np.ndarray,
    exponent: np.ndarray,
    scale: np.ndarray,
    likelihood: np.ndarray,
) -> None:
    """Steps 1-4 of the update of run ``r``, in place: ``previous[r]`` becomes ``B_t``.

    For particle ``i`` with ``p = B_{t-1}^i``: draw ``phi_p`` (``g_s ~ Gamma(counts[p, s])``,
    ``phi_{p,s} = g_s / sum g``; ``P_1`` or the known row otherwise), then with the reward
    predictive ``p(R_t | s) = c · scale[k] · exp(exponent[k])`` of state ``s`` in pool slot
    ``k = slot[r, i, s]`` (``predictive``; ``c`` a
    constant common to every particle):

        q(s) = phi_{p,s} · p(R_t | s),   log w_i += log sum_s q(s),
        B_t^i ~ q / sum_s q,   counts[p, B_t^i] += 1.

    The exponent is shifted by the run's largest ``top`` over states with ``phi > 0`` (one
    exponential per slot); a particle whose own ``top_i`` is more than ``UNDERFLOW`` below
    uses ``top_i`` instead, or its ``q`` would underflow to 0.
    Draws: ``N · S`` gammas (learnt transitions, after the first round), then ``N``
    uniforms for the ``B_t^i``.
    """
    N, S = slot.shape[1], slot.shape[2]
    q = np.empty((N, S))
    if counts is not None and started:
        for i in range(N):
            for s in range(S):
                q[i, s] = counts[r, i, previous[r, i], s]
        standard_gammas(generator, q)  # in place: g_s ~ Gamma(counts[p, s])
    else:
        _transition_rows(r, previous, counts, started, initial, transitions, q)
    tops = np.full(N, -np.inf)
    top = -np.inf
    for i in range(N):
        for s in range(S):
            if q[i, s] > 0.0 and exponent[slot[r, i, s]] > tops[i]:
                tops[i] = exponent[slot[r, i, s]]
        top = max(top, tops[i])
    for k in live:  # a slot used only where phi = 0 may lie above top: inf, never used
        likelihood[k] = scale[k] * np.exp(exponent[k] - top)
    for i in range(N):
        own = top - tops[i] > UNDERFLOW
        mass = 0.0
        total = 0.0
        for s in range(S):
            k = slot[r, i, s]
            mass += q[i, s]
            if q[i, s] == 0.0:  # phi = 0; its exponent may exceed the top
                continue
            if own:
                q[i, s] *= scale[k] * np.exp(exponent[k] - tops[i])
            else:
                q[i, s] *= likelihood[k]
            total += q[i, s]
        log_weights[r, i] += np.log(total / mass) + (tops[i] if own else top) - HALF_LOG_TWO_PI
    new = np.empty(N, dtype=np.int64)
    draw_each(q, generator, new)
    for i in range(N):
        if counts is not None and started:
            counts[r, i, previous[r, i], new[i]] += 1.0
        previous[r, i] = new[i]


@jit
def resample(
    r: int,
    generator: np.random.Generator,
    log_weights: np.ndarray,
    previous: np.ndarray,
    counts: np.ndarray | None,
    threshold: float,
    scheme: int,
    weights: np.ndarray,
    ancestors: np.ndarray,
) -> bool:
    """Step 5 for run ``r``: resample if ``ESS = 1 / sum_i w_i^2 < threshold · N``.

    Writes the normalised weights into ``weights[r]`` (scratch, ``(R, N)``) and the
    ancestors into ``ancestors`` (``(N,)``, ``a[i] = i`` where nothing moves; see
    ``.resampling``), copies ``previous`` and ``counts`` and resets the weights.
    Returns whether the run resampled: the caller then copies the reward statistics.
    """
    N = previous.shape[1]
    top = normalise(log_weights, r, weights)
    square_sum = 0.0
    for i in range(N):
        log_weights[r, i] -= top
        square_sum += weights[r, i] * weights[r, i]
        ancestors[i] = i
    if 1.0 / square_sum >= threshold * N:
        return False
    draw_ancestors(weights[r], scheme, generator, ancestors)
    for i in range(N):
        a = ancestors[i]
        if a != i:
            previous[r, i] = previous[r, a]
            if counts is not None:
                counts[r, i] = counts[r, a]
        log_weights[r, i] = 0.0
    return True
