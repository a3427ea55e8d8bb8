"""From a command line's overrides to results on disk (docs/design.md §8).

May import: :mod:`nslb_cli.envs`, :mod:`nslb_cli.agents`, :mod:`nslb_cli.data`,
:mod:`nslb_cli.store`, :mod:`nslb_cli.bandit`, :mod:`nslb_cli.common`.
"""
