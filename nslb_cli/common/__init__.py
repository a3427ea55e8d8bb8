"""What every package of nslb has in common (the bottom layer): refusing bad values, finding
the registered agents and environments, the cache folder, and requests to stop.

* :mod:`~nslb_cli.common.errors` — :class:`ConfigError` (a bad value, one line naming its
  key) and ``describe_error`` (any exception on one line);
* :mod:`~nslb_cli.common.validators` — the ``Section`` base of every ``Params`` dataclass
  (one rule for all: integers fit 64 bits, floats are finite) and the checks of what a value
  means;
* :mod:`~nslb_cli.common.registry` — registries from a config name (``agent=umts``) to the
  class behind it, found as Python entry points (nslb's own and plugins');
* :mod:`~nslb_cli.common.paths` — nslb's user cache folder, and whether a folder can be
  written;
* :mod:`~nslb_cli.common.stopping` — requests to stop (Ctrl-C, SIGTERM), which nothing that
  catches a plugin's or a job's errors may swallow.

May import: nothing of ``nslb_cli``. (Composing ``conf/`` with Hydra into a validated
``RunConfig`` needs the registries' entries and lives in :mod:`nslb_cli.runner.config`.)
"""
