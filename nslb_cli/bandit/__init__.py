"""The bandit vocabulary that agents and environments share: the problem's shape, what agents
are told, the world, the trace, the reward models and the random streams (docs/design.md §1-2).

* :mod:`~nslb_cli.bandit.problem` — :class:`Problem` (sizes, horizon, reward model), the
  :class:`OfflineModel` agents are told, the oracle's :class:`Truth` and the :class:`Sizes`
  a memory declaration reads;
* :mod:`~nslb_cli.bandit.world` — a batch of environment realisations;
* :mod:`~nslb_cli.bandit.trace` — what a simulation produced, round by round;
* :mod:`~nslb_cli.bandit.rewards` — reward likelihoods and their conjugate posteriors;
  :mod:`~nslb_cli.bandit.reward_kernels`, their compiled scalar twins;
* :mod:`~nslb_cli.bandit.rng` — per-seed random streams (common random numbers, batch
  invariance);
* :mod:`~nslb_cli.bandit.numerics` — stable exponentials (softmax).

May import: :mod:`nslb_cli.compiled` and :mod:`nslb_cli.common`.
"""
