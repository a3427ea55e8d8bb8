"""What every package of nslb has in common (the bottom layer): refusing bad values
(:mod:`~nslb_cli.common.errors`, :mod:`~nslb_cli.common.validators`), the registries of
agents and environments, folders, CPUs, code run apart, and requests to stop.

May import: nothing of ``nslb_cli``. (Composing ``conf/`` with Hydra into a validated
``RunConfig`` needs the registries' entries and lives in :mod:`nslb_cli.runner.config`.)
"""
