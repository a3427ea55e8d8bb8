"""nslb's Optuna sweeper (``hydra/sweeper=optuna``): a study's trials asked of Optuna, launched
in batches of ``n_jobs`` by the launcher, each told the objective its job returned.

Written against Hydra's public sweeper interface and Optuna's ask-and-tell interface; its
settings and sampler options are ``nslb_cli.runner.study.OptunaSweeper`` and ``SAMPLERS``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import (
    ChoiceSweep,
    IntervalSweep,
    Override,
    RangeSweep,
    Transformer,
)
from hydra.core.plugins import Plugins
from hydra.core.utils import JobReturn, JobStatus
from hydra.plugins.launcher import Launcher
from hydra.plugins.sweeper import Sweeper
from hydra.types import HydraContext, TaskFunction
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

if TYPE_CHECKING:
    import optuna

log = logging.getLogger(__name__)

Suggest = Callable[["optuna.trial.Trial"], Any]
"""How a trial draws the value of one tuned key."""


def suggestion(override: Override) -> Suggest:
    """How a trial draws the key of the sweep ``override``, as Hydra's Optuna sweeper drew it:
    ``choice`` (a comma list, a shuffled range) a category; ``range`` integers by ``step``,
    both ends included (reals on that grid if an end or the step is real); ``interval`` a
    real, or an integer when both ends are (``int(interval(…))``); tagged ``log``, on a log
    scale."""
    key, value = override.get_key_element(), override.value()
    if isinstance(value, ChoiceSweep) or (isinstance(value, RangeSweep) and value.shuffle):
        choices: list[Any] = list(override.sweep_iterator(transformer=Transformer.encode))
        return lambda trial: trial.suggest_categorical(key, choices)
    if isinstance(value, RangeSweep):
        ends = (value.start, value.stop, value.step)
        if any(isinstance(end, float) for end in ends):
            low, high, step = (float(end or 0) for end in ends)
            return lambda trial: trial.suggest_float(key, low, high, step=step)
        first, last, by = (int(end or 0) for end in ends)
        return lambda trial: trial.suggest_int(key, first, last, step=by)
    if isinstance(value, IntervalSweep):
        start, end, logarithmic = value.start, value.end, "log" in value.tags
        assert start is not None and end is not None  # the grammar's interval has both ends
        if isinstance(start, int) and isinstance(end, int):
            return lambda trial: trial.suggest_int(key, start, end, log=logarithmic)
        return lambda trial: trial.suggest_float(key, start, end, log=logarithmic)
    raise ValueError(f"'{override.input_line}' is not a search space Optuna takes")


def search_space(overrides: Sequence[str]) -> tuple[dict[str, Suggest], dict[str, str]]:
    """The tuned keys of ``overrides`` (each with its draw) and the fixed ones (with their
    value), in the order first given; a key given twice keeps its last value, and a fixed
    value wins over a sweep."""
    tuned: dict[str, Suggest] = {}
    fixed: dict[str, str] = {}
    for override in OverridesParser.create().parse_overrides(list(overrides)):
        key = override.get_key_element()
        if override.is_sweep_override():
            tuned[key] = suggestion(override)
        else:
            fixed[key] = override.get_value_element_as_str()
    return {k: v for k, v in tuned.items() if k not in fixed}, fixed


class OptunaSweeper(Sweeper):
    """Tunes the search space of ``params`` and the command line with an Optuna study."""

    def __init__(
        self,
        sampler: Any,
        direction: str,
        storage: str | None,
        study_name: str | None,
        n_trials: int,
        n_jobs: int,
        params: DictConfig | None,
    ) -> None:
        # an Optuna sampler: Hydra 1.3 instantiates hydra.sweeper.sampler with the sweeper,
        # Hydra 1.4 hands over its config
        self.sampler = instantiate(sampler) if OmegaConf.is_config(sampler) else sampler
        self.direction, self.storage, self.study_name = direction, storage, study_name
        self.n_trials, self.n_jobs = n_trials, n_jobs
        self.params = {str(key): str(space) for key, space in (params or {}).items()}
        self.config: DictConfig | None = None
        self.launcher: Launcher | None = None

    def setup(
        self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig
    ) -> None:
        self.config = config
        self.launcher = Plugins.instance().instantiate_launcher(
            hydra_context=hydra_context, task_function=task_function, config=config
        )

    def sweep(self, arguments: list[str]) -> None:
        """Run ``n_trials`` trials, ``n_jobs`` at a time: ask, launch, tell."""
        import optuna  # the [tune] extra

        from nslb_cli.runner.study import storage_url  # here: Hydra imports every plugin

        assert self.config is not None and self.launcher is not None
        tuned, fixed = search_space([f"{k}={v}" for k, v in self.params.items()] + arguments)
        storage = storage_url(self.storage, Path(str(self.config.hydra.sweep.dir)))
        study = _study(storage, self.sampler, self.study_name, self.direction)
        log.info(f"Study {study.study_name} in {storage}: {type(self.sampler).__name__}, "
                 f"{self.direction}, {self.n_trials} trials, {self.n_jobs} at a time")  # fmt: skip
        for first in range(0, self.n_trials, self.n_jobs):
            trials = [study.ask() for _ in range(min(self.n_jobs, self.n_trials - first))]
            batch = [_overrides(trial, tuned, fixed) for trial in trials]
            try:
                returns = self.launcher.launch(batch, initial_job_idx=first)
            except BaseException:  # stopped (Ctrl-C, SIGTERM): no trial left running
                for trial in trials:
                    study.tell(trial, state=optuna.trial.TrialState.FAIL)
                raise
            for trial, returned in zip(trials, returns, strict=True):
                _tell(study, trial, returned)
            for returned in returns:
                _ = returned.return_value  # a job that raised: its error, now all are told


def _study(storage: str, sampler: Any, name: str | None, direction: str) -> optuna.Study:
    """The study ``name`` in ``storage``: the one ``nslb_cli.runner.study.start`` opened (or
    made), else a new one; Optuna's notice of which is left to the sweeper's own line."""
    import optuna

    from nslb_cli.runner.study import optuna_quiet

    with optuna_quiet():
        return optuna.create_study(
            storage=storage,
            sampler=sampler,
            study_name=name,
            direction=optuna.study.StudyDirection[direction.upper()],
            load_if_exists=True,
        )


def _overrides(
    trial: optuna.trial.Trial, tuned: dict[str, Suggest], fixed: dict[str, str]
) -> list[str]:
    """The overrides of ``trial``'s job: its drawn values, then the fixed ones."""
    drawn = {key: draw(trial) for key, draw in tuned.items()}
    return [f"{key}={value}" for key, value in (drawn | fixed).items()]


def _tell(study: optuna.Study, trial: optuna.trial.Trial, returned: JobReturn) -> None:
    """Tell ``study`` the objective of ``trial``'s job; a job that failed (it returned no
    objective, or raised) is a failed trial."""
    import optuna

    value = returned.return_value if returned.status == JobStatus.COMPLETED else None
    if value is None:
        study.tell(trial, state=optuna.trial.TrialState.FAIL)
        log.info(f"Trial {trial.number} failed with parameters: {trial.params}.")
    else:
        study.tell(trial, float(value))
        log.info(f"Trial {trial.number} finished with value: {value} and parameters: "
                 f"{trial.params}.")  # fmt: skip
