"""The ``nslb`` command: a thin dispatcher over subcommands.

``nslb run <overrides>`` hands its arguments to the Hydra application (so ``-m``,
``--cfg job``, ``--help`` and launcher plugins work as in any Hydra app), after checking
every job's config so a typo fails in one line before anything is simulated.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from nslb_cli.config import CONFIG_MODULE, CONFIG_NAME, check_command_line, validate
from nslb_cli.params import ConfigError
from nslb_cli.results import OutputConflict

USAGE = """usage: nslb <command> [arguments]

commands:
  run [-m] [key=value ...]   simulate (Hydra overrides: env=…, agent=…, agent.tau=…, run.n_seeds=…)
  list                       the available environments, agents and experiment presets
  data prepare [env.k=v …]   MovieLens: build and cache the data, print its diagnostics
  data path                  MovieLens: print the cache folder

`nslb run --help` lists the config groups and the composed config; `nslb run --cfg job`
prints the config a run would use.
"""
MULTIRUN_FLAGS = ("-m", "--multirun")


def fail(message: str) -> None:
    """Print one line to stderr and exit with status 2."""
    print(f"nslb: error: {message}", file=sys.stderr)
    raise SystemExit(2)


@hydra.main(version_base="1.3", config_path=f"pkg://{CONFIG_MODULE}", config_name=CONFIG_NAME)
def hydra_job(cfg: DictConfig) -> None:
    """One job of ``nslb run``: simulate into Hydra's output folder."""
    from nslb_cli.job import run_job

    folder = Path(HydraConfig.get().runtime.output_dir)
    try:
        run_job(validate(cfg), cfg, folder)
    except (ConfigError, OutputConflict) as err:
        fail(str(err))
    except KeyboardInterrupt:
        print(
            f"nslb: interrupted; the seeds finished so far are kept in {folder}: "
            "re-run the same command to continue",
            file=sys.stderr,
        )
        raise SystemExit(130) from None


def run(arguments: Sequence[str]) -> None:
    """``nslb run``: check every job of the command line, then hand over to Hydra."""
    flags = [a for a in arguments if a.startswith("-") and a not in MULTIRUN_FLAGS]
    if not flags:
        overrides = [a for a in arguments if a not in MULTIRUN_FLAGS]
        multirun = len(overrides) < len(arguments)
        try:
            check_command_line(overrides, multirun)
        except ConfigError as err:
            fail(str(err))
    sys.argv = [f"{Path(sys.argv[0]).name} run", *arguments]
    hydra_job()


def list_configs() -> None:
    """Print the options of each config group."""
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


def data(arguments: Sequence[str]) -> None:
    """``nslb data``: MovieLens preparation (the logic is in :mod:`nslb_cli.data.commands`)."""
    from nslb_cli.data.commands import main as data_main

    try:
        data_main(arguments)
    except ConfigError as err:
        fail(str(err))


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of the ``nslb`` console script."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    if not arguments or arguments[0] in ("-h", "--help", "help"):
        print(USAGE, end="")
        return
    command, rest = arguments[0], arguments[1:]
    if command == "run":
        run(rest)
    elif command == "list":
        list_configs()
    elif command == "data":
        data(rest)
    else:
        fail(f"unknown command '{command}'; use one of: run, list, data (see `nslb --help`)")
