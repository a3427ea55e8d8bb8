"""The problem that agents and environments share: its shape, what agents are told, the world,
the reward models and the random streams (docs/design.md §1-2).

* :mod:`~nslb_cli.core.problem` — :class:`Problem` (sizes, horizon, reward model), the
  :class:`OfflineModel` agents are told, and the oracle's :class:`Truth`;
* :mod:`~nslb_cli.core.world` — a batch of environment realisations;
* :mod:`~nslb_cli.core.trace` — what a simulation produced, round by round;
* :mod:`~nslb_cli.core.rewards` — reward likelihoods and their conjugate posteriors;
  :mod:`~nslb_cli.core.reward_kernels`, their compiled scalar twins;
* :mod:`~nslb_cli.core.rng` — per-seed random streams (common random numbers, batch
  invariance); :mod:`~nslb_cli.core.generator_list`, the same generators for compiled code;
* :mod:`~nslb_cli.core.numerics` — stable exponentials (softmax);
* :mod:`~nslb_cli.core.compiled` — numba's settings for nslb and its versioned code cache.

May import: :mod:`nslb_cli.config`.
"""
