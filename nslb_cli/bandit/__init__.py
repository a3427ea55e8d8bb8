"""The bandit vocabulary that agents and environments share: the problem's shape, what agents
are told, the world, the trace, the reward models and the random streams (docs/design.md §1-2).

* ``problem`` — ``Problem`` (sizes, horizon, reward model), the
  ``OfflineModel`` agents are told, the oracle's ``Truth`` and the ``Sizes``
  a memory declaration reads;
* ``world`` — a batch of environment realisations;
* ``trace`` — what a simulation produced, round by round;
* ``rewards`` — reward likelihoods and their conjugate posteriors;
  ``reward_kernels``, their compiled scalar twins;
* ``rng`` — per-seed random streams (common random numbers, batch
  invariance);
* ``numerics`` — stable exponentials (softmax).

May import: ``nslb_cli.compiled`` and ``nslb_cli.common``.
"""
