"""From a command line's overrides to results on disk.

* :mod:`~nslb_cli.runner.config` — the validated config of a job,
  :class:`~nslb_cli.runner.config.RunConfig`, and its schema (the bottom of the runner);
* :mod:`~nslb_cli.runner.overrides` — a command line's overrides, parsed, and nslb's own
  checks of them before Hydra composes;
* :mod:`~nslb_cli.runner.folders` — run folders' names;
* :mod:`~nslb_cli.runner.sweep` — every job of a sweep checked before any runs (nslb's
  Hydra sweeper calls it), and the order its launcher runs them in, with what they share;
* :mod:`~nslb_cli.runner.compose` — compose ``conf/`` with Hydra: one job's config, and the
  check of a command line before Hydra starts;
* :mod:`~nslb_cli.runner.engines` — the engines of ``run.engine``, one object each: a batch's
  trace, what they refuse, a batch's arrays, what their numbers depend on;
* :mod:`~nslb_cli.runner.memory` — how much memory a batch needs, estimated up front;
* :mod:`~nslb_cli.runner.job` — one Hydra job: the seeds not yet done, simulated in batches
  and written;
* :mod:`~nslb_cli.runner.simulate` — the round loop, the only code that touches both a world
  and an agent;
* :mod:`~nslb_cli.runner.failures` — keep-going sweeps: failed jobs recorded, a summary;
* :mod:`~nslb_cli.runner.owner` — workers whose command has gone write nothing;
* :mod:`~nslb_cli.runner.conformance` — the checks every agent must pass (``nslb check``);
* :mod:`~nslb_cli.runner.study` — Optuna studies: trial records and ``best.yaml``;
* :mod:`~nslb_cli.runner.warmup` — every agent's compiled kernels, compiled in advance.

May import: :mod:`nslb_cli.envs`, :mod:`nslb_cli.agents`, :mod:`nslb_cli.data`,
:mod:`nslb_cli.store`, :mod:`nslb_cli.bandit`, :mod:`nslb_cli.common`. Never the command line
or the plots.
"""
