"""nslb's launcher: Hydra's basic launcher (each job in turn, in this process), jobs that
choose the same config groups sharing one composition, and jobs on the JAX engine that share
a program run one after another (:func:`nslb_cli.runner.job.plan_sweep`).

Hydra's basic launcher composes each job whole (``ConfigLoader.load_sweep_config``,
0.05–0.2 s a job), so a sweep of 100 values of one key composes the same defaults 100
times. :class:`JobConfigs` composes each choice of groups once, through the same public
loader, and gives each job a copy with its values set, as Hydra sets them
(:class:`nslb_cli.runner.compose.Compositions`); then it writes in the copy what Hydra's
loader records of the job's overrides (``hydra.overrides.task``,
``hydra.job.override_dirname``). A test compares every job's config with Hydra's own.

``conf/launching.yaml`` chooses this launcher; ``hydra/launcher=joblib`` (or submitit, Ray)
on the command line replaces it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from hydra.core.config_loader import ConfigLoader
from hydra.core.config_store import ConfigStore
from hydra.core.utils import JobReturn, configure_log, filter_overrides, run_job, setup_globals
from hydra.plugins.launcher import Launcher
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig, open_dict

log = logging.getLogger(__name__)


@dataclass
class NslbLauncherConf:
    """``hydra/launcher=nslb``: no settings."""

    _target_: str = "hydra_plugins.nslb_sweep.launcher.NslbLauncher"


ConfigStore.instance().store(
    group="hydra/launcher", name="nslb", node=NslbLauncherConf, provider="nslb"
)


class JobConfigs:
    """The config of each job of a sweep whose config is ``master``, as ``loader`` would
    compose it, each choice of config groups composed once."""

    def __init__(self, loader: ConfigLoader, master: DictConfig) -> None:
        # Imported here: Hydra imports every plugin module whenever any Hydra application of
        # this environment starts, and nslb's composition module takes most of a second.
        from nslb_cli.runner.compose import Compositions, parse_overrides

        self._compositions = Compositions(lambda job: loader.load_sweep_config(master, job))
        self._parse = parse_overrides

    def __call__(self, job: list[str]) -> DictConfig:
        """The config of the job of overrides ``job`` (without Hydra's own overrides)."""
        config = self._compositions(job)
        naming = config.hydra.job.config.override_dirname
        task = [o for o in self._parse(job) if not o.is_hydra_override()]
        named = sorted(
            o.input_line or "" for o in task if o.key_or_group not in naming.exclude_keys
        )
        with open_dict(config.hydra):
            config.hydra.overrides.task = [o.input_line for o in task]
            dirname = str(naming.item_sep).join(named)
            config.hydra.job.override_dirname = dirname.replace("=", str(naming.kv_sep))
        return config


class NslbLauncher(Launcher):
    """Each job of a batch in turn, in this process, as Hydra's basic launcher runs them."""

    def __init__(self) -> None:
        self.config: DictConfig | None = None
        self.task_function: TaskFunction | None = None
        self.hydra_context: HydraContext | None = None
        self.job_configs: JobConfigs | None = None

    def setup(
        self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig
    ) -> None:
        """Keep the sweep's config, the task and the loader's context."""
        self.config = config
        self.hydra_context = hydra_context
        self.task_function = task_function
        self.job_configs = JobConfigs(hydra_context.config_loader, config)

    def launch(
        self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int
    ) -> Sequence[JobReturn]:
        """Run each job (numbered from ``initial_job_idx``); return their results."""
        assert self.config is not None and self.hydra_context is not None
        assert self.task_function is not None and self.job_configs is not None
        setup_globals()
        configure_log(self.config.hydra.hydra_logging, self.config.hydra.verbose)
        Path(str(self.config.hydra.sweep.dir)).mkdir(parents=True, exist_ok=True)
        log.info(f"Launching {len(job_overrides)} jobs locally")
        configs = [self.job_configs(list(overrides)) for overrides in job_overrides]
        from nslb_cli.runner.job import plan_sweep  # here: see JobConfigs

        # jobs on the JAX engine that share a program (and batches) run one after another
        order = plan_sweep(configs)
        runs: dict[int, JobReturn] = {}
        for at in order:
            number, config = initial_job_idx + at, configs[at]
            log.info(f"\t#{number} : {' '.join(filter_overrides(job_overrides[at]))}")
            with open_dict(config):
                config.hydra.job.id = number
                config.hydra.job.num = number
            runs[at] = run_job(hydra_context=self.hydra_context, task_function=self.task_function,
                               config=config, job_dir_key="hydra.sweep.dir",
                               job_subdir_key="hydra.sweep.subdir")  # fmt: skip
            configure_log(self.config.hydra.hydra_logging, self.config.hydra.verbose)
        return [runs[at] for at in range(len(configs))]
