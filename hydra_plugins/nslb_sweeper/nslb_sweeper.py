"""nslb's sweeper: the jobs of Hydra's basic sweeper, launched without composing each twice.

Hydra's basic sweeper composes every job of a batch (``Sweeper.validate_batch_is_legal``)
before its launcher composes each again to run it, so that a job that cannot be composed
fails before any runs. ``nslb run`` has done that already: its check
(:func:`nslb_cli.runner.compose.check_command_line`) composes and validates every job of
the sweep, before Hydra starts. This sweeper expands the command line into the basic
sweeper's jobs, in its order (:func:`nslb_cli.runner.compose.basic_sweep`), saves the
sweep's config as ``multirun.yaml`` in the sweep folder, and launches the jobs in batches
of ``max_batch_size`` (all at once when ``null``) numbered on from batch to batch, as the
basic sweeper does. A batch's jobs that the check did not validate in this process (a
command with Hydra flags such as ``--config-dir`` skips the check) are composed
beforehand, as the basic sweeper composes them.

Hydra finds plugins in the ``hydra_plugins`` namespace package only. ``conf/config.yaml``
chooses this sweeper (``override hydra/sweeper: nslb``); a study (``hparams_search=…``)
chooses Optuna's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from hydra.core.config_store import ConfigStore
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.plugins import Plugins
from hydra.core.utils import JobReturn
from hydra.errors import HydraException
from hydra.plugins.launcher import Launcher
from hydra.plugins.sweeper import Sweeper
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig, OmegaConf


@dataclass
class NslbSweeperConf:
    """``hydra/sweeper=nslb``: the settings of Hydra's basic sweeper."""

    _target_: str = "hydra_plugins.nslb_sweeper.nslb_sweeper.NslbSweeper"
    max_batch_size: int | None = None
    params: dict[str, str] | None = None


ConfigStore.instance().store(
    group="hydra/sweeper", name="nslb", node=NslbSweeperConf, provider="nslb"
)


class NslbSweeper(Sweeper):
    """Hydra's basic sweep (the product of each key's values), each job composed once: by
    the launcher that runs it, nslb's check having validated it already."""

    def __init__(self, max_batch_size: int | None, params: dict[str, str] | None = None) -> None:
        if max_batch_size is not None and max_batch_size < 1:
            raise HydraException(f"hydra.sweeper.max_batch_size must be >= 1 or null, "
                                 f"got {max_batch_size}")  # fmt: skip
        self.max_batch_size = max_batch_size
        self.params = dict(params or {})
        self.hydra_context: HydraContext | None = None
        self.config: DictConfig | None = None
        self.launcher: Launcher | None = None

    def setup(
        self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig
    ) -> None:
        """Keep the sweep's config and instantiate its launcher (``hydra.launcher``)."""
        self.hydra_context = hydra_context
        self.config = config
        self.launcher = Plugins.instance().instantiate_launcher(
            hydra_context=hydra_context, task_function=task_function, config=config
        )

    def sweep(self, arguments: list[str]) -> list[Sequence[JobReturn]]:
        """Launch the jobs of ``hydra.sweeper.params`` and ``arguments`` (the command line's
        overrides but Hydra's own); return each batch's results."""
        # Imported here: Hydra imports every plugin module whenever any Hydra application of
        # this environment starts, and nslb's composition module takes most of a second.
        from nslb_cli.runner.compose import basic_sweep, checked

        assert self.hydra_context is not None and self.config is not None
        assert self.launcher is not None
        parser = OverridesParser.create(config_loader=self.hydra_context.config_loader)
        params = [f"{key}={value}" for key, value in self.params.items()]
        jobs = basic_sweep(parser.parse_overrides(params + list(arguments)))
        folder = Path(self.config.hydra.sweep.dir)
        folder.mkdir(parents=True, exist_ok=True)
        OmegaConf.save(self.config, folder / "multirun.yaml")
        size = self.max_batch_size or len(jobs)
        returns: list[Sequence[JobReturn]] = []
        for start in range(0, len(jobs), size):
            batch = jobs[start : start + size]
            unchecked = [job for job in batch if not checked(job)]
            if unchecked:
                self.validate_batch_is_legal(unchecked)
            results = self.launcher.launch(batch, initial_job_idx=start)
            for result in results:
                _ = result.return_value  # a job's exception, as the basic sweeper raises it
            returns.append(results)
        return returns
