"""The ``nslb`` command: a thin dispatcher over subcommands, one module each.

* :mod:`~nslb_cli.cli.run` — ``nslb run <overrides>`` (Hydra);
* :mod:`~nslb_cli.cli.plot` — ``nslb plot DIR``;
* :mod:`~nslb_cli.cli.data` — ``nslb data prepare|path``;
* ``nslb list`` — the options of each config group (here).

Each subcommand's module is imported only when it is used: matplotlib (plot) and Hydra's
composition (run) are slow to import. (The functions here are private: a public ``run``
would be shadowed by the submodule of the same name once it is imported.)
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from importlib import resources

from nslb_cli.cli.errors import fail
from nslb_cli.params import ConfigError

USAGE = """usage: nslb <command> [arguments]

commands:
  run [-m] [key=value ...]   simulate (Hydra overrides: env=…, agent=…, agent.tau=…, run.n_seeds=…)
  plot DIR [options]         figures and summary tables for the results under DIR (--out FOLDER)
  list                       the available environments, agents and experiment presets
  data prepare [env.k=v …]   MovieLens: build and cache the data, print its diagnostics
  data path                  MovieLens: print the cache folder

`nslb run --help` lists the config groups and the composed config; `nslb run --cfg job`
prints the config a run would use; `nslb plot --help` lists the plot options.
"""


def _run(arguments: Sequence[str]) -> None:
    """``nslb run``: see :mod:`nslb_cli.cli.run`."""
    from nslb_cli.cli.run import main as run_main

    run_main(arguments)


def _plot(arguments: Sequence[str]) -> None:
    """``nslb plot``: figures and tables from results on disk."""
    from nslb_cli.cli.plot import main as plot_main
    from nslb_cli.plot.report import PlotError

    try:
        plot_main(arguments)
    except PlotError as err:
        fail(str(err))


def _data(arguments: Sequence[str]) -> None:
    """``nslb data``: MovieLens preparation."""
    from nslb_cli.cli.data import main as data_main

    try:
        data_main(arguments)
    except ConfigError as err:
        fail(str(err))


def _list() -> None:
    """Print the options of each config group."""
    from nslb_cli.config import CONFIG_MODULE

    root = resources.files(CONFIG_MODULE)
    for group in ("env", "agent", "experiment"):
        names = sorted(_options(root / group))
        print(f"{group}: {', '.join(names) if names else '(none)'}")


def _options(folder: resources.abc.Traversable, prefix: str = "") -> list[str]:
    if not folder.is_dir():
        return []
    found = []
    for entry in folder.iterdir():
        if entry.is_dir():
            found += _options(entry, f"{prefix}{entry.name}/")
        elif entry.name.endswith(".yaml"):
            found.append(prefix + entry.name[: -len(".yaml")])
    return found


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of the ``nslb`` console script."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    if not arguments or arguments[0] in ("-h", "--help", "help"):
        print(USAGE, end="")
        return
    command, rest = arguments[0], arguments[1:]
    if command == "run":
        _run(rest)
    elif command == "plot":
        _plot(rest)
    elif command == "list":
        _list()
    elif command == "data":
        _data(rest)
    else:
        fail(f"unknown command '{command}'; use one of: run, plot, list, data (see `nslb --help`)")
