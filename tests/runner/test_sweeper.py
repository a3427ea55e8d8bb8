"""nslb's sweeper and launcher (``hydra_plugins/nslb_sweep``): Hydra's basic sweep, every job
checked before any runs; the jobs numbered on from batch to batch."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from hydra import compose, initialize_config_module
from hydra.core.global_hydra import GlobalHydra
from hydra.core.plugins import Plugins
from hydra.core.utils import JobReturn, JobStatus
from hydra.plugins.launcher import Launcher
from hydra.types import HydraContext, RunMode
from omegaconf import DictConfig

from nslb_cli.common.errors import ConfigError
from nslb_cli.runner import study
from nslb_cli.runner.compose import CONFIG_MODULE, register_options
from tests.helpers.cli import QUICK, nslb

NSLB_SWEEPER = "hydra_plugins.nslb_sweep.sweeper.NslbSweeper"
NSLB_LAUNCHER = "hydra_plugins.nslb_sweep.launcher.NslbLauncher"
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


@pytest.fixture
def loader() -> Iterator[object]:
    """Hydra's own config loader of nslb's configs."""
    register_options()
    with initialize_config_module(CONFIG_MODULE, version_base="1.3"):
        yield GlobalHydra.instance().config_loader()


def _master(loader: object, folder: Path) -> DictConfig:
    """The config of a sweep, as Hydra composes it before its sweeper starts."""
    overrides = [f"hydra.sweep.dir={folder}"]
    return loader.load_configuration("config", overrides, RunMode.MULTIRUN)  # type: ignore[attr-defined]


def _sweeper(loader: object, folder: Path, batch: int | None) -> tuple[Any, Recorder]:
    """nslb's sweeper of ``PRESET``, its launcher a ``Recorder``. Its module is
    imported after Hydra's plugin scan, as the command imports it (the scan executes the
    basic sweeper's module again)."""
    Plugins.instance()
    from hydra_plugins.nslb_sweep.sweeper import NslbSweeper

    sweeper = NslbSweeper(max_batch_size=batch, params=PRESET)
    launcher = Recorder()
    sweeper.config = _master(loader, folder)
    sweeper.launcher = launcher
    sweeper.hydra_context = HydraContext(config_loader=loader, callbacks=None)  # type: ignore[arg-type]
    return sweeper, launcher


def test_nslb_sweeps_with_its_own_sweeper_and_launcher_and_studies_with_optunas() -> None:
    register_options()
    with initialize_config_module(CONFIG_MODULE, version_base="1.3"):
        sweep = compose("config", return_hydra_config=True)
        tuning = compose("config", overrides=["hparams_search=cd_ucb"], return_hydra_config=True)
    assert sweep.hydra.sweeper._target_ == NSLB_SWEEPER
    assert sweep.hydra.launcher._target_ == NSLB_LAUNCHER == tuning.hydra.launcher._target_
    assert study.is_study(tuning.hydra.sweeper)


def test_every_job_is_checked_before_the_first_batch_launches(
    loader: object, tmp_path: Path
) -> None:
    sweeper, launcher = _sweeper(loader, tmp_path, batch=1)  # the bad job in batch 2
    with pytest.raises(
        ConfigError, match=r"> 0, got -1 \(in sweep job agent=cd_ucb env.horizon=-1\)"
    ):
        sweeper.sweep(["env.horizon=5,-1"])
    assert launcher.batches == []
    assert not (tmp_path / "multirun.yaml").exists()


def test_a_sweep_in_batches_numbers_its_jobs_on(tmp_path: Path) -> None:
    done = nslb("run", "-m", "agent=mts,random", "env.horizon=5,6", "run.n_seeds=1", *QUICK[1:],
                "hydra.sweeper.max_batch_size=3", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    log = done.stdout + done.stderr
    assert re.findall(r"Launching (\d+) jobs", log) == ["3", "1"]
    assert [int(n) for n in re.findall(r"\t#(\d+) : ", log)] == [0, 1, 2, 3]
    assert len(list((tmp_path / "outputs/default/synthetic").glob("*/*/seed=0.csv"))) == 4
