"""``nslb warmup``: compile every agent's kernels in advance, so no real run waits for them.

numba compiles a kernel for the argument types of its first call and caches it on disk
(:mod:`nslb_cli.compiled.jit`); the types depend on the reward model (Gaussian or clicks)
and on whether the model is known or a prior, not on the sizes. Each registered agent
therefore plays a few rounds of two seeds in each of :data:`SETTINGS`. Kernels that only
MovieLens's contextual worlds reach (umTS's linear posterior) compile on the first
MovieLens run.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from nslb_cli.agents import AGENTS
from nslb_cli.common.validators import ConfigError
from nslb_cli.envs import ENVIRONMENTS
from nslb_cli.runner.compose import RunConfig, RunSettings
from nslb_cli.runner.job import simulate_seeds

SETTINGS = tuple(
    {"model": model, "reward": reward, "horizon": 12, "n_arms": 3, "n_states": 2}
    for model in ("known", "prior")
    for reward in ("gaussian", "bernoulli")
)
"""The synthetic worlds every agent plays (one per argument-type family)."""


def warm_up(report: Callable[[str], None]) -> int:
    """Run every agent on every setting; ``report`` gets one line per agent. Returns the
    number of (agent, setting) pairs played; pairs an agent refuses are skipped."""
    synthetic = ENVIRONMENTS["synthetic"]
    played = 0
    for name in AGENTS:
        start, done = time.perf_counter(), 0
        for values in SETTINGS:
            env = replace(synthetic.Params(), **values)
            try:
                agent = AGENTS[name].Params()
                settings = RunSettings(n_seeds=2, progress=False)
                simulate_seeds(RunConfig("warmup", env, agent, settings), np.arange(2))
            except ConfigError:  # e.g. an agent that takes Gaussian rewards only
                continue
            done += 1
        played += done
        report(f"{name}: {done} of {len(SETTINGS)} settings, {time.perf_counter() - start:.1f} s")
    return played
