"""nslb's sweeper (``hydra_plugins/nslb_sweeper``): Hydra's basic sweep, each job that nslb's
check validated composed once, by the launcher that runs it."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import pytest
from hydra import compose, initialize_config_module
from hydra.core.utils import JobReturn, JobStatus
from hydra.plugins.launcher import Launcher
from hydra.types import HydraContext
from omegaconf import DictConfig, OmegaConf

from hydra_plugins.nslb_sweeper.nslb_sweeper import NslbSweeper
from nslb_cli.runner import study
from nslb_cli.runner.compose import CONFIG_MODULE, check_command_line, register_options
from tests.helpers.cli import QUICK, nslb

NSLB_SWEEPER = "hydra_plugins.nslb_sweeper.nslb_sweeper.NslbSweeper"
PRESET = {"agent": "cd_ucb,cd_ts,exp4s,mts,umts"}  # experiment=paper/fixed's sweep


class Recorder(Launcher):
    """A launcher that runs nothing: it records each batch and its first job's number."""

    def __init__(self) -> None:
        self.batches: list[tuple[int, list[list[str]]]] = []

    def setup(self, **_: object) -> None:
        raise AssertionError("the test gives the sweeper its launcher")

    def launch(
        self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int
    ) -> Sequence[JobReturn]:
        self.batches.append((initial_job_idx, [list(job) for job in job_overrides]))
        return [JobReturn(status=JobStatus.COMPLETED, _return_value=0.0) for _ in job_overrides]


class Loader:
    """Hydra's config loader as a sweeper uses it: records each job it is asked to compose."""

    def __init__(self) -> None:
        self.composed: list[list[str]] = []

    def load_sweep_config(self, master_config: DictConfig, sweep_overrides: list[str]) -> None:
        self.composed.append(sweep_overrides)


def _sweeper(folder: Path, max_batch_size: int | None) -> tuple[NslbSweeper, Recorder, Loader]:
    sweeper = NslbSweeper(max_batch_size=max_batch_size, params=PRESET)
    launcher, loader = Recorder(), Loader()
    sweeper.config = OmegaConf.create({"hydra": {"sweep": {"dir": str(folder)}}})
    sweeper.launcher = launcher
    sweeper.hydra_context = HydraContext(config_loader=loader, callbacks=None)
    return sweeper, launcher, loader


def test_nslb_sweeps_with_its_own_sweeper_and_studies_with_optunas() -> None:
    register_options()
    with initialize_config_module(CONFIG_MODULE, version_base="1.3"):
        sweep = compose("config", return_hydra_config=True)
        tuning = compose("config", overrides=["hparams_search=cd_ucb"], return_hydra_config=True)
    assert sweep.hydra.sweeper._target_ == NSLB_SWEEPER
    assert study.is_study(tuning.hydra.sweeper)


def test_the_checked_jobs_are_launched_in_batches_without_composing_them_again(
    tmp_path: Path,
) -> None:
    command = ["experiment=paper/fixed", "env.horizon=1,2", "++env.sigma=0.5"]
    plan = check_command_line([*command, f"hydra.sweep.dir={tmp_path}"], multirun=True)
    sweeper, launcher, loader = _sweeper(tmp_path, max_batch_size=4)

    sweeper.sweep(command)

    assert loader.composed == []  # the check composed them: Hydra's basic sweeper would again
    assert [(first, len(batch)) for first, batch in launcher.batches] == [(0, 4), (4, 4), (8, 2)]
    jobs = [job for _, batch in launcher.batches for job in batch]
    assert len(jobs) == plan.jobs
    assert jobs[:3] == [
        ["agent=cd_ucb", "experiment=paper/fixed", "env.horizon=1", "++env.sigma=0.5"],
        ["agent=cd_ucb", "experiment=paper/fixed", "env.horizon=2", "++env.sigma=0.5"],
        ["agent=cd_ts", "experiment=paper/fixed", "env.horizon=1", "++env.sigma=0.5"],
    ]
    assert OmegaConf.load(tmp_path / "multirun.yaml") == sweeper.config


def test_jobs_the_check_did_not_validate_are_composed_before_their_batch(tmp_path: Path) -> None:
    """A command with Hydra flags (``--config-dir``, …) skips nslb's check: its jobs are
    composed beforehand, as Hydra's basic sweeper composes them."""
    sweeper, launcher, loader = _sweeper(tmp_path, max_batch_size=None)

    sweeper.sweep(["experiment=paper/fixed", "env.horizon=77"])

    assert [first for first, _ in launcher.batches] == [0]
    assert loader.composed == launcher.batches[0][1]
    assert len(loader.composed) == 5


def test_a_batch_size_below_one_is_refused() -> None:
    with pytest.raises(Exception, match="max_batch_size must be >= 1 or null, got 0"):
        NslbSweeper(max_batch_size=0)


def test_a_sweep_in_batches_numbers_its_jobs_on(tmp_path: Path) -> None:
    done = nslb("run", "-m", "agent=mts,random", "env.horizon=5,6", "run.n_seeds=1", *QUICK[1:],
                "hydra.sweeper.max_batch_size=3", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    log = done.stdout + done.stderr
    assert re.findall(r"Launching (\d+) jobs", log) == ["3", "1"]
    assert [int(n) for n in re.findall(r"\t#(\d+) : ", log)] == [0, 1, 2, 3]
    assert len(list((tmp_path / "outputs/default/synthetic").glob("*/*/seed=0.csv"))) == 4
