"""Numpy statements of the agents' compiled kernels: the specification the tests hold them to.

Each function reads (or, for the CD agents' update and the mean-shift detector, writes) an
agent's or detector's own arrays and does in numpy what a compiled per-run loop does, so a
test can compare the two bit for bit or against a brute-force computation. Nothing in
``nslb_cli`` calls them: the agents run only the compiled kernels.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from nslb_cli.agents.bocd import BOCDThompsonSampling
from nslb_cli.agents.changepoint import CDUCB, DetectorRestarted
from nslb_cli.agents.cusum import CUSUMUCB
from nslb_cli.agents.detectors import MeanShiftDetector
from nslb_cli.agents.glr import GLRklUCB
from nslb_cli.agents.mucb import SlidingWindowModelUCB


def cusum_index(agent: CUSUMUCB) -> np.ndarray:
    """CUSUM-UCB's UCB indices ``(R, K)``, the arms ``cusum_choice``
    ranks: ``Y_a / N_a + 2 sigma sqrt(2 log(n_t) / N_a)`` with ``n_t = sum_a N_a``, ``+inf``
    for arms not pulled since their restart."""
    total = agent.pulls.sum(axis=1, keepdims=True)  # n_t
    with np.errstate(divide="ignore", invalid="ignore"):
        ucb = agent.sums / agent.pulls + 2.0 * agent.problem.sigma * np.sqrt(
            2.0 * np.log(np.maximum(total, 1.0)) / agent.pulls
        )
    return np.where(agent.pulls > 0, ucb, np.inf)


def mean_shift_update(
    detector: MeanShiftDetector, arms: np.ndarray, rewards: np.ndarray
) -> np.ndarray:
    """Cao et al.'s test after recording ``(A_t, R_t)`` of every run: ``(R,)`` bool, True
    where, with ``Y_1 .. Y_tau`` the pulled arm's last ``tau`` rewards (oldest first),
    ``| sum_{i > tau/2} Y_i - sum_{i <= tau/2} Y_i | > threshold`` and the arm has ``tau``
    rewards since the reset (``restarted_update`` compiled)."""
    runs = np.arange(len(arms))
    count = detector.counts[runs, arms]
    detector.rewards[runs, arms, count % detector.tau] = rewards
    count = count + 1
    detector.counts[runs, arms] = count
    # The slot written next holds the oldest reward: read the window from there.
    oldest_first = (count[:, None] + np.arange(detector.tau)) % detector.tau
    window = detector.rewards[runs[:, None], arms[:, None], oldest_first]  # (R, tau)
    half = detector.tau // 2
    shift = window[:, half:].sum(axis=1) - window[:, :half].sum(axis=1)
    return (count >= detector.tau) & (np.abs(shift) > detector.threshold)


def cd_choose(agent: DetectorRestarted, t: int) -> np.ndarray:
    """The base algorithm's arm for every run, ``(R,)``: CD-UCB's
    ``argmax_a Y_a / n_a + sigma sqrt(8 log(t - r + 1) / n_a)`` (unpulled arms first), CD-TS's
    argmax of one posterior draw per arm (the draws of
    ``thompson_choice``)."""
    if isinstance(agent, CDUCB):
        rounds = (t - agent.restart + 1).astype(float)[:, None]
        with np.errstate(divide="ignore", invalid="ignore"):
            index = agent.sums / agent.pulls + agent.problem.sigma * np.sqrt(
                8.0 * np.log(rounds) / agent.pulls
            )
        return np.where(agent.pulls == 0, np.inf, index).argmax(axis=1)
    theta = agent.problem.reward_model.sample_given_sums(agent.pulls, agent.sums, agent.rng)
    return theta.argmax(axis=1)


def reference_act(agent: DetectorRestarted, t: int) -> np.ndarray:
    """CD-UCB's / CD-TS's ``act``: the forced arm ``(t - r) mod period`` where it is below
    ``K``, else ``cd_choose``'s."""
    base = cd_choose(agent, t)
    phase = (t - agent.restart) % np.maximum(agent.period, 1)
    forced = (agent.period > 0) & (phase < agent.problem.n_arms)
    return np.where(forced, phase, base)


def reference_update(
    agent: DetectorRestarted, t: int, actions: np.ndarray, rewards: np.ndarray
) -> None:
    """CD-UCB's / CD-TS's ``update`` (``restarted_update``):
    the pulled arms' statistics, ``mean_shift_update``, the restarts."""
    runs = np.arange(agent.problem.n_runs)
    agent.pulls[runs, actions] += 1.0
    agent.sums[runs, actions] += rewards
    agent.restart_where(mean_shift_update(agent.detector, actions, rewards), t)


def glr_threshold(k: np.ndarray, delta: np.ndarray) -> np.ndarray:
    """``beta(k, delta) = log(3 k^(3/2) / delta)``."""
    return np.log(3.0) + 1.5 * np.log(k) - np.log(delta)


def split_statistics(
    divergence: Callable[[np.ndarray, np.ndarray], np.ndarray],
    prefix: np.ndarray,
    total: np.ndarray,
    k: np.ndarray,
    s: np.ndarray,
) -> np.ndarray:
    """``G(s) = s d(mu_1:s, mu_1:k) + (k - s) d(mu_s+1:k, mu_1:k)`` (the module docstring of
    ``nslb_cli.agents.glr``), broadcasting: ``prefix`` the sum of the first ``s`` rewards,
    ``total`` the sum of all ``k``, ``divergence(x, y)`` the reward model's (one call for both
    halves)."""
    mean = total / k
    halves = divergence(np.stack(np.broadcast_arrays(prefix / s, (total - prefix) / (k - s))), mean)
    return s * halves[0] + (k - s) * halves[1]


def glr_statistic(agent: GLRklUCB, runs: np.ndarray, arms: np.ndarray, k: np.ndarray) -> np.ndarray:
    """``max_s G(s)`` of arm ``arms[i]`` of run ``runs[i]`` on its first ``k[i] >= 2``
    rewards since its restart, over the split points ``1, 1 + Delta s, .. <= k - 1``:
    ``(m,)`` (what ``glr_update`` compares with the threshold)."""
    step = agent.params.split_every
    width = int((k.max() - 2) // step + 1)
    s = 1 + step * np.arange(width)[None, :]  # split points (sizes of the first part)
    valid = s <= (k - 1)[:, None]
    rows, cols = runs[:, None], arms[:, None]
    prefix = agent.prefix[rows, cols, np.where(valid, np.arange(width)[None, :], 0)]
    total = agent.sums[runs, arms][:, None]
    with np.errstate(divide="ignore", invalid="ignore"):  # invalid splits: masked below
        g = split_statistics(agent.problem.reward_model.divergence, prefix, total, k[:, None], s)
    return np.where(valid, g, -np.inf).max(axis=1)


def consistent_states(agent: SlidingWindowModelUCB) -> np.ndarray:
    """SW-mUCB's ``C_t`` as an ``(R, S)`` mask, before any fallback: the states ``s`` with
    ``G_t(s) <= radius sqrt(N_t(s))`` (what ``sw_mucb_choice``
    computes)."""
    S = agent.problem.n_states
    member = agent.believed[:, None, :] == np.arange(S)[None, :, None]  # (R, S, tau)
    count = member.sum(axis=2)
    gap = (member * agent.residuals[:, None, :]).sum(axis=2)
    return gap <= agent.radius * np.sqrt(count)


def run_length_posterior(agent: BOCDThompsonSampling, t: int) -> np.ndarray:
    """BOCD's ``P(l_t = l | H_t)`` for ``l = 0 … t`` before round ``t`` (after
    ``update(t - 1)``), ``(R, t + 1)``, from its kept hypotheses; discarded run lengths have
    probability 0."""
    dense = np.zeros((agent.problem.n_runs, t + 1))
    for r in range(agent.problem.n_runs):
        live = agent.count[r]
        np.add.at(dense[r], t - agent.start[r, :live], agent.mass[r, :live])
    return dense
