"""nslb's sweeper: the jobs of Hydra's basic sweeper, each checked before any runs.

Hydra's basic sweeper composes every job of a batch (``Sweeper.validate_batch_is_legal``)
before its launcher composes each again to run it. This sweeper expands the command line
into the basic sweeper's jobs, in its order (:func:`nslb_cli.runner.compose.basic_sweep`),
composes and validates every job of the sweep, each choice of config groups composed once
(:class:`~hydra_plugins.nslb_sweep.launcher.JobConfigs`; one line naming the first bad
job, before any runs), saves the sweep's config as ``multirun.yaml`` in the sweep folder,
and launches the jobs in batches of ``max_batch_size`` (all at once when ``null``) numbered
on from batch to batch, as the basic sweeper does. nslb's launcher takes the compositions
over; another launcher (joblib, submitit, Ray) composes each job again.

Hydra finds plugins in the ``hydra_plugins`` namespace package only. ``conf/launching.yaml``
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

from hydra_plugins.nslb_sweep.launcher import JobConfigs


@dataclass
class NslbSweeperConf:
    """``hydra/sweeper=nslb``: the settings of Hydra's basic sweeper."""

    _target_: str = "hydra_plugins.nslb_sweep.sweeper.NslbSweeper"
    max_batch_size: int | None = None
    params: dict[str, str] | None = None


ConfigStore.instance().store(
    group="hydra/sweeper", name="nslb", node=NslbSweeperConf, provider="nslb"
)


class NslbSweeper(Sweeper):
    """Hydra's basic sweep (the product of each key's values), every job checked first."""

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
        """Check, then launch, the jobs of ``hydra.sweeper.params`` and ``arguments`` (the
        command line's overrides but Hydra's own); return each batch's results."""
        from nslb_cli.runner.compose import basic_sweep, check_job

        assert self.hydra_context is not None and self.config is not None
        assert self.launcher is not None
        parser = OverridesParser.create(config_loader=self.hydra_context.config_loader)
        params = [f"{key}={value}" for key, value in self.params.items()]
        jobs = basic_sweep(parser.parse_overrides(params + list(arguments)))
        configs = getattr(self.launcher, "job_configs", None)
        if not isinstance(configs, JobConfigs):
            configs = JobConfigs(self.hydra_context.config_loader, self.config)
        for job in jobs:
            check_job(configs, job, jobs)
        folder = Path(self.config.hydra.sweep.dir)
        folder.mkdir(parents=True, exist_ok=True)
        OmegaConf.save(self.config, folder / "multirun.yaml")
        size = self.max_batch_size or len(jobs)
        returns: list[Sequence[JobReturn]] = []
        for start in range(0, len(jobs), size):
            results = self.launcher.launch(jobs[start : start + size], initial_job_idx=start)
            for result in results:
                _ = result.return_value  # a job's exception, as the basic sweeper raises it
            returns.append(results)
        return returns
