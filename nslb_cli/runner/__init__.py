"""From a command line's overrides to results on disk (docs/design.md §8).

May import: ``nslb_cli.envs``, ``nslb_cli.agents``, ``nslb_cli.data``,
``nslb_cli.store``, ``nslb_cli.bandit``, ``nslb_cli.common``.
"""
