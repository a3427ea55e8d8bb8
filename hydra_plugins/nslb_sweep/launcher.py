"""nslb's launcher: Hydra's basic launch, in ``nslb_cli.runner.sweep.plan_sweep``'s order."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

from hydra.core.utils import JobReturn, configure_log, filter_overrides, run_job, setup_globals
from hydra.plugins.launcher import Launcher
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig, open_dict

log = logging.getLogger(__name__)


class NslbLauncher(Launcher):
    """Each job of a batch in turn, in this process, in the order the JAX engine plans."""

    def __init__(self) -> None:
        self.config: DictConfig | None = None
        self.task_function: TaskFunction | None = None
        self.hydra_context: HydraContext | None = None
        self.composed: dict[int, DictConfig] = {}  # the sweeper's configs by job number

    def setup(
        self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig
    ) -> None:
        self.config = config
        self.hydra_context = hydra_context
        self.task_function = task_function

    def launch(
        self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int
    ) -> Sequence[JobReturn]:
        """Run each job (numbered from ``initial_job_idx``); return their results in order."""
        from nslb_cli.runner.sweep import plan_sweep  # here: see the sweeper's import

        assert self.config is not None and self.hydra_context is not None
        assert self.task_function is not None
        setup_globals()
        configure_log(self.config.hydra.hydra_logging, self.config.hydra.verbose)
        Path(str(self.config.hydra.sweep.dir)).mkdir(parents=True, exist_ok=True)
        log.info(f"Launching {len(job_overrides)} jobs locally")
        configs = [self._config(initial_job_idx + at, job) for at, job in enumerate(job_overrides)]
        runs: dict[int, JobReturn] = {}
        order, sharing = plan_sweep(configs)
        with sharing:
            for at in order:
                number, config = initial_job_idx + at, configs[at]
                log.info(f"\t#{number} : {' '.join(filter_overrides(job_overrides[at]))}")
                with open_dict(config):
                    config.hydra.job.id = number
                    config.hydra.job.num = number
                runs[at] = run_job(
                    hydra_context=self.hydra_context,
                    task_function=self.task_function,
                    config=config,
                    job_dir_key="hydra.sweep.dir",
                    job_subdir_key="hydra.sweep.subdir",
                )
                configure_log(self.config.hydra.hydra_logging, self.config.hydra.verbose)
        return [runs[at] for at in range(len(configs))]

    def _config(self, number: int, job: Sequence[str]) -> DictConfig:
        """The config of job ``number`` (overrides ``job``): the sweeper's, else composed."""
        config = self.composed.pop(number, None)
        if config is None:
            assert self.config is not None and self.hydra_context is not None
            config = self.hydra_context.config_loader.load_sweep_config(self.config, list(job))
        return config
