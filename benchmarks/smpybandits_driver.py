"""Play SMPyBandits policies on worlds exported by ``benchmarks/smpybandits.py`` (not a test).

Runs in a side virtual environment that has SMPyBandits 0.9.7 (numpy < 2.1, scipy < 1.15)
and no nslb: ``make smpy-venv`` makes ``.bench/smpy-venv``. It reads the worlds (``worlds.npz``:
``mean_rewards`` (R, n, K), ``noise`` (R, n), ``reward`` "gaussian" or "bernoulli") and a
policy (a class of ``SMPyBandits.Policies``, or of this file, with keyword arguments), plays
every seed with the rewards exactly as nslb's worlds realise them (``mean + noise``, or
``1[u < mean]``), and writes the expected regret of each seed and the seconds it took.

    python benchmarks/smpybandits_driver.py WORLDS.npz POLICY.json RESULT.json

Corrections of SMPyBandits' own defects live here, each named and explained (the comparison
is then made against the corrected class, and its table says so).
"""

from __future__ import annotations

import json
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


CORRECTED = {"CorrectedDiscountedUCB": CorrectedDiscountedUCB}


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
    regrets = [play(lambda: cls(K, **extra), means[r], rewards[r]) for r in range(R)]
    seconds = time.perf_counter() - start
    with open(result_path, "w") as handle:
        json.dump({"regret": regrets, "seconds": seconds, "policy": str(cls(K, **extra))}, handle)


if __name__ == "__main__":
    main(*sys.argv[1:4])
