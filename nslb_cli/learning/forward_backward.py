"""The E-step of Baum–Welch for an HMM whose emission depends on the state and the arm pulled:
the scaled forward–backward recursions of Rabiner (1989, §V.A), sequence after sequence,
accumulating the expected sufficient statistics of all of them.

With ``b_t(s) = p(r_t | S_t = s, a_t)`` and scale factors ``c_t``,

    alpha_1 = pi * b_1 / c_1,       alpha_t = (alpha_{t-1} P) * b_t / c_t,
    beta_n = 1,                     beta_t = P (b_{t+1} * beta_{t+1}) / c_{t+1},
    gamma_t = alpha_t * beta_t,     xi_t(i, j) = alpha_t(i) P(i, j) b_{t+1}(j) beta_{t+1}(j) / c',

with ``c' = c_{t+1}``; ``c_t`` normalises ``alpha_t`` to sum to one, and
``log p(r_1..r_n | a_1..a_n) = sum_t log c_t``. Each ``b_t`` is computed from the
log-likelihoods less their largest value over states, which is added back to the
log-likelihood, so that no rare reward underflows.

Emissions: Gaussian (``log N(r; means[s, a], var[s])``, ``table`` unused) or discrete
(``table[s, a, o] = log p(o | s, a)`` of the outcome index ``o``: Bernoulli's 0 and 1, or a
categorical outcome).
"""

from __future__ import annotations

import numpy as np

from nslb_cli.compiled.jit import jit

LOG_2PI = float(np.log(2.0 * np.pi))


@jit
def expected_counts(
    gaussian: bool,
    means: np.ndarray,
    var: np.ndarray,
    table: np.ndarray,
    arms: np.ndarray,
    rewards: np.ndarray,
    lengths: np.ndarray,
    initial: np.ndarray,
    transitions: np.ndarray,
) -> tuple[float, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(log-likelihood, E[#S_1 = s], E[#s -> s'], E[pulls of a in s], E[sum of rewards],
    E[sum of squared rewards], E[#outcome o of a in s])`` of the sequences, sequence ``m`` the
    first ``lengths[m]`` rounds of ``arms[m]`` and ``rewards[m]`` (``(M, T)``)."""
    M, T = arms.shape
    S, K, N = table.shape
    log_likelihood = 0.0
    first = np.zeros(S)
    moves = np.zeros((S, S))
    pulls = np.zeros((S, K))
    sums = np.zeros((S, K))
    squares = np.zeros((S, K))
    counts = np.zeros((S, K, N))
    alpha = np.empty((T, S))
    beta = np.empty((T, S))
    b = np.empty((T, S))
    scale = np.empty(T)
    ahead = np.empty(S)
    norm = LOG_2PI + np.log(var)
    precision = 1.0 / var
    for m in range(M):
        n = lengths[m]
        for t in range(n):  # b_t and the forward pass
            a, r = arms[m, t], rewards[m, t]
            for s in range(S):
                if gaussian:
                    b[t, s] = -0.5 * (norm[s] + (r - means[s, a]) ** 2 * precision[s])
                else:
                    b[t, s] = table[s, a, int(r)]
            top = b[t].max()
            total = 0.0
            for j in range(S):
                b[t, j] = np.exp(b[t, j] - top)
                if t == 0:
                    alpha[t, j] = initial[j] * b[t, j]
                else:
                    into = 0.0
                    for i in range(S):
                        into += alpha[t - 1, i] * transitions[i, j]
                    alpha[t, j] = into * b[t, j]
                total += alpha[t, j]
            scale[t] = total
            for j in range(S):
                alpha[t, j] /= total
            log_likelihood += top + np.log(total)
        for j in range(S):
            beta[n - 1, j] = 1.0
        for t in range(n - 2, -1, -1):  # the backward pass, and xi_t summed over t
            for j in range(S):
                ahead[j] = b[t + 1, j] * beta[t + 1, j] / scale[t + 1]
            for i in range(S):
                out = 0.0
                for j in range(S):
                    step = transitions[i, j] * ahead[j]
                    out += step
                    moves[i, j] += alpha[t, i] * step
                beta[t, i] = out
        for t in range(n):  # gamma_t into the emission statistics
            a, r = arms[m, t], rewards[m, t]
            o = 0 if gaussian else int(r)
            for s in range(S):
                gamma = alpha[t, s] * beta[t, s]
                if t == 0:
                    first[s] += gamma
                pulls[s, a] += gamma
                sums[s, a] += gamma * r
                squares[s, a] += gamma * r * r
                counts[s, a, o] += gamma
    return log_likelihood, first, moves, pulls, sums, squares, counts
