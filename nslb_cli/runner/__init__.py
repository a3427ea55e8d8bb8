"""From a command line's overrides to results on disk: the validated config at the bottom
(:mod:`~nslb_cli.runner.config`), the overrides and nslb's checks of them, composition, the
check of a sweep's jobs, the engines, memory estimates, one Hydra job, the round loop,
keep-going sweeps, studies and the conformance checks (docs/design.md §8).

May import: :mod:`nslb_cli.envs`, :mod:`nslb_cli.agents`, :mod:`nslb_cli.data`,
:mod:`nslb_cli.store`, :mod:`nslb_cli.bandit`, :mod:`nslb_cli.common`. Never the command line
or the plots.
"""
