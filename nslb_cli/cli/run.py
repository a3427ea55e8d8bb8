"""``nslb run <overrides>``: check every job of the command line, then hand over to Hydra.

The arguments go to the Hydra application unchanged (so ``-m``, ``--cfg job``, ``--help``
and launcher plugins work as in any Hydra app), after every job's config has been checked
so a typo fails in one line before anything is simulated.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from nslb_cli.cli.errors import fail
from nslb_cli.config import CONFIG_MODULE, CONFIG_NAME, check_command_line, validate
from nslb_cli.params import ConfigError
from nslb_cli.results import OutputConflict

MULTIRUN_FLAGS = ("-m", "--multirun")


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


def main(arguments: Sequence[str]) -> None:
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
