"""Play SMPyBandits policies on worlds exported by ``benchmarks/smpybandits.py`` (not a test).

Runs in a side virtual environment that has SMPyBandits 0.9.7 (numpy < 2.1, scipy < 1.15)
and no nslb: ``make smpy-venv`` makes ``.bench/smpy-venv``. It reads the worlds (``worlds.npz``:
``mean_rewards`` (R, n, K), ``noise`` (R, n), ``reward`` "gaussian" or "bernoulli") and a
policy (a class of ``SMPyBandits.Policies``, or of this file, with keyword arguments), plays
every seed with the rewards exactly as nslb's worlds realise them (``mean + noise``, or
``1[u < mean]``), and writes the expected regret of each seed and the seconds it took. The
global generators SMPyBandits draws from (numpy's and ``random``'s) are seeded with the seed's
index before it plays, so a table is reproducible.

    python benchmarks/smpybandits_driver.py WORLDS.npz POLICY.json RESULT.json

Corrections of SMPyBandits' own defects live here, each named and explained (the comparison
is then made against the corrected class, and its table says so).
"""

from __future__ import annotations

import json
import random
import sys
import time
from pathlib import Path

import numpy as np
from SMPyBandits import Policies


class CorrectedDiscountedUCB(Policies.DiscountedUCB):
    """D-UCB with its discounted counts kept as floats.

    SMPyBandits 0.9.7 allocates ``discounted_pulls`` with ``dtype=int``, so each update
    ``gamma^(1 + delay) N + 1`` is truncated back to an integer: with ``gamma < 1`` a count
    never grows past 1, and the exploration bonus never shrinks. Garivier & Moulines (2011)
    discount real-valued counts ``N_t(gamma, i)``.
    """

    def __init__(self, nbArms: int, *args: object, **kwargs: object) -> None:
        super().__init__(nbArms, *args, **kwargs)
        self.discounted_pulls = np.zeros(nbArms, dtype=float)

    def startGame(self) -> None:
        super().startGame()
        self.discounted_pulls = np.zeros(self.nbArms, dtype=float)


class EagerDiscountedUCB(CorrectedDiscountedUCB):
    """D-UCB with float counts (as ``CorrectedDiscountedUCB``) whose index uses every
    arm's statistics discounted up to the current round.

    Two further corrections of SMPyBandits 0.9.7's ``DiscountedUCB``:

    1. Lazy discounting. It discounts an arm's count and reward sum only when that arm is
       pulled again (by ``gamma^(1 + delay)``), so the index of every other arm uses its
       count as of its last pull, not ``N_t(gamma, i) = sum_s gamma^(t - s) 1{I_s = i}``, and
       ``n_t(gamma)`` sums these stale counts. The stale counts are too large by
       ``gamma^-(rounds since the arm's last pull)``, so the arms not played lately get too
       small a bonus. Garivier & Moulines (2011) discount every arm in every round: here every
       count and sum is multiplied by ``gamma`` after each round, then the pulled arm's reward
       is added.
    2. Unplayed arms. It gives an infinite index to arms whose discounted count is below 1,
       which with integer counts meant "never pulled". With counts discounted every round,
       an arm's count drops below 1 one round after its pull; only an arm never pulled
       (``pulls == 0``) gets the infinite index here (the paper's first ``K`` rounds).

    The index is SMPyBandits' own, ``X / N + sqrt(alpha log(n) / (2 N))``.
    """

    def getReward(self, arm: int, reward: float) -> None:
        # BasePolicy's bookkeeping (t, pulls), without DiscountedUCB's lazy update.
        super(Policies.DiscountedUCB, self).getReward(arm, reward)
        self.discounted_pulls *= self.gamma
        self.discounted_rewards *= self.gamma
        self.discounted_pulls[arm] += 1.0
        self.discounted_rewards[arm] += (reward - self.lower) / self.amplitude

    def computeAllIndex(self) -> None:
        n = np.sum(self.discounted_pulls)
        with np.errstate(divide="ignore", invalid="ignore"):
            index = self.discounted_rewards / self.discounted_pulls + np.sqrt(
                self.alpha * np.log(n) / (2 * self.discounted_pulls)
            )
        index[self.pulls == 0] = np.inf
        self.index[:] = index


CORRECTED = {
    "CorrectedDiscountedUCB": CorrectedDiscountedUCB,
    "EagerDiscountedUCB": EagerDiscountedUCB,
}


class CorrectedCUSUM_IndexPolicy(Policies.CUSUM_IndexPolicy):
    """CUSUM-UCB as Liu, Lee & Shroff (2018) state it: three corrections of SMPyBandits
    0.9.7's ``CUSUM_IndexPolicy`` (used with ``use_localization=False``).

    1. The CUSUM random walk. The paper's increments are ``s_k = (y_k - u_0 - eps) 1{k > M}``
       (and the mirrored one): the first ``M`` rewards only estimate ``u_0``. SMPyBandits'
       ``detect_change`` runs the walk over *every* reward of the arm, the first ``M``
       included (``enumerate(data_y, self.M + 1)`` only shifts the counter), so the walk
       can already cross ``h`` on the ``M`` rewards its own baseline averages: extra alarms.
    2. Uniform exploration. ``CD_IndexPolicy.choice`` explores with
       ``np.random.randint(0, nbArms - 1)``, whose upper bound is exclusive: the last arm is
       never explored. The paper pulls each arm with probability ``alpha / K``.
    3. The reward that raises an alarm. The paper restarts the arm at ``tau = t + 1``: its
       statistics and test start empty. SMPyBandits keeps that reward as the first
       observation of the new segment (``last_pulls = 1``). Here the arm restarts empty, and
       its UCB time ``n_t`` (the sum of the arms' pulls since their restarts) drops with it.
    """

    def choice(self) -> int:
        # SMPyBandits' policies draw from numpy's global generator; so does this one.
        if np.random.random() < self.proba_random_exploration:  # noqa: NPY002
            return int(np.random.randint(0, self.nbArms))  # noqa: NPY002
        return self.policy.choice()

    def detect_change(self, arm: int, verbose: bool = False) -> tuple[bool, None]:
        data = self.all_rewards[arm]
        if len(data) <= self.M:
            return False, None
        u0 = np.mean(data[: self.M])
        g_plus, g_minus = 0.0, 0.0
        for y in data[self.M :]:
            g_plus = max(0.0, g_plus + (u0 - y - self.epsilon))
            g_minus = max(0.0, g_minus + (y - u0 - self.epsilon))
            if g_plus >= self.threshold_h or g_minus >= self.threshold_h:
                return True, None
        return False, None

    def getReward(self, arm: int, reward: float) -> None:
        super().getReward(arm, reward)
        if self.last_restart_times[arm] == self.t:  # restarted on this very reward
            self.all_rewards[arm] = []
            self.last_pulls[arm] = 0
            self.policy.rewards[arm] = 0
            self.policy.pulls[arm] = 0
            self.policy.t = int(np.sum(self.last_pulls))


class PaperklUCB_forGLR(Policies.klUCB_forGLR):
    """kl-UCB for GLR-klUCB with the paper's exploration function (Besson et al. 2022, eq. (3)):
    ``f(t_k) = log(t_k) + 3 log(max(1, log(t_k)))``, ``t_k`` the rounds since arm ``k``'s
    restart.

    SMPyBandits 0.9.7's ``klUCB_forGLR`` computes ``c log(t_k)`` with ``c = 3``, although its
    docstring (and the paper) say ``log(t_k) + c log(log(t_k))``: three times the paper's
    leading term, hence more exploration. ``log log`` is clipped at 0 for ``t_k < e`` as in
    SMPyBandits' ``klUCBloglog`` (the paper's ``f(2)`` is negative).
    """

    def exploration(self) -> np.ndarray:
        log_t = np.log(np.maximum(self.t_for_each_arm, 1))
        return log_t + 3.0 * np.log(np.maximum(1.0, log_t))

    def computeAllIndex(self) -> None:
        with np.errstate(divide="ignore", invalid="ignore"):
            levels = self.exploration() / self.pulls
            means = self.rewards / self.pulls
        self.index[:] = [
            self.klucb(m, d, self.tolerance) if p > 0 else np.inf
            for m, d, p in zip(means, levels, self.pulls, strict=True)
        ]


class GaussianklUCB_forGLR(Policies.klUCB_forGLR):
    """SMPyBandits' ``klUCB_forGLR`` (exploration ``3 log(t_k)``) for Gaussian rewards of
    variance ``SIG2 = 0.25``: index ``mean + sqrt(2 SIG2 · 3 log(t_k) / N_k)``.

    SMPyBandits has no Gaussian kl-UCB usable here: ``klUCB(klucb=klucbGauss)`` calls
    ``klucb(x, d, self.tolerance)``, which ``klucbGauss(x, d, sig2x)`` reads as the variance
    (1e-4), an index with almost no exploration; and the Bernoulli ``klucbBern`` clips
    Gaussian rewards' means into [0, 1]. This is ``klUCB_forGLR`` with the Gaussian index in
    closed form, otherwise unchanged.
    """

    SIG2 = 0.25

    def exploration(self) -> np.ndarray:
        return self.c * np.log(np.maximum(self.t_for_each_arm, 1))

    def computeAllIndex(self) -> None:
        with np.errstate(divide="ignore", invalid="ignore"):
            index = self.rewards / self.pulls + np.sqrt(
                2.0 * self.SIG2 * np.maximum(self.exploration(), 0.0) / self.pulls
            )
        index[self.pulls < 1] = np.inf
        self.index[:] = index


class PaperGaussianklUCB_forGLR(GaussianklUCB_forGLR):
    """``GaussianklUCB_forGLR`` with the paper's exploration function, as
    ``PaperklUCB_forGLR``: ``f(t_k) = log(t_k) + 3 log(max(1, log(t_k)))``."""

    exploration = PaperklUCB_forGLR.exploration


CORRECTED.update(
    {
        "CorrectedCUSUM_IndexPolicy": CorrectedCUSUM_IndexPolicy,
        "PaperklUCB_forGLR": PaperklUCB_forGLR,
        "GaussianklUCB_forGLR": GaussianklUCB_forGLR,
        "PaperGaussianklUCB_forGLR": PaperGaussianklUCB_forGLR,
    }
)


class CorrectedDiscountedThompson(Policies.DiscountedThompson):
    """D-TS that discounts the arms it did not pull.

    SMPyBandits 0.9.7's ``DiscountedBayesianIndexPolicy.getReward`` loops over the arms other
    than the one pulled but calls ``discount()`` on the *pulled* arm's posterior each time
    (``self.posterior[arm]``, not ``self.posterior[otherArm]``): the pulled arm's counts lose
    a further factor ``gamma^(K - 1)`` at every pull, and the other arms' counts are never
    discounted. Raj & Kalyani (2017, Algorithm 1) discount every arm every round,
    ``S_k <- gamma S_k + 1[k = A_t] r_t`` and ``F_k <- gamma F_k + 1[k = A_t] (1 - r_t)``;
    here the pulled arm is updated by ``DiscountedBeta.update`` (``gamma N + 1`` for the
    observed outcome, ``gamma N`` for the other) and every other arm by ``discount()``.
    """

    def getReward(self, arm: int, reward: float) -> None:
        self.posterior[arm].update((reward - self.lower) / self.amplitude)
        for other in range(self.nbArms):
            if other != arm:
                self.posterior[other].discount()
        self.t += 1


CORRECTED["CorrectedDiscountedThompson"] = CorrectedDiscountedThompson


def policy_class(name: str) -> type:
    """A policy class of SMPyBandits, or a corrected one of this file."""
    return CORRECTED.get(name) or getattr(Policies, name)


def play(make: object, means: np.ndarray, rewards: np.ndarray) -> float:
    """One seed: the policy's total expected regret over the horizon."""
    policy = make()
    policy.startGame()
    best = means.max(axis=1)
    regret = 0.0
    for t in range(len(means)):
        arm = int(policy.choice())
        policy.getReward(arm, float(rewards[t, arm]))
        regret += best[t] - means[t, arm]
    return regret


def main(worlds_path: str, policy_path: str, result_path: str) -> None:
    worlds = np.load(worlds_path)
    spec = json.loads(Path(policy_path).read_text())
    cls = policy_class(spec["class"])
    means, noise = worlds["mean_rewards"], worlds["noise"]
    R, n, K = means.shape
    if str(worlds["reward"]) == "bernoulli":
        rewards = (noise[:, :, None] < means).astype(float)
    else:
        rewards = means + noise[:, :, None]
    kwargs = spec["kwargs"]
    extra = {k: v for k, v in kwargs.items() if k != "policy"}
    if "policy" in kwargs:  # a wrapper's base policy, by name
        extra["policy"] = policy_class(kwargs["policy"])
    start = time.perf_counter()
    regrets = []
    for r in range(R):  # SMPyBandits draws from the global generators: seeded per seed
        np.random.seed(r)  # noqa: NPY002
        random.seed(r)
        regrets.append(play(lambda: cls(K, **extra), means[r], rewards[r]))
    seconds = time.perf_counter() - start
    with open(result_path, "w") as handle:
        json.dump({"regret": regrets, "seconds": seconds, "policy": str(cls(K, **extra))}, handle)


if __name__ == "__main__":
    main(*sys.argv[1:4])
