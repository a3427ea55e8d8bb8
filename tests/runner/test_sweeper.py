"""nslb's sweeper and launcher (``hydra_plugins/nslb_sweep``): Hydra's basic sweep, every job
checked before any runs, jobs that choose the same config groups sharing one composition."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from hydra import compose, initialize_config_module
from hydra.core.global_hydra import GlobalHydra
from hydra.core.utils import JobReturn, JobStatus
from hydra.plugins.launcher import Launcher
from hydra.types import HydraContext, RunMode
from omegaconf import DictConfig, OmegaConf

from hydra_plugins.nslb_sweep.launcher import JobConfigs
from hydra_plugins.nslb_sweep.sweeper import NslbSweeper
from nslb_cli.common.validators import ConfigError
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


class Loader:
    """Hydra's config loader, counting the jobs it composes."""

    def __init__(self, loader: object) -> None:
        self.loader = loader
        self.composed: list[list[str]] = []

    def load_sweep_config(self, master: DictConfig, overrides: list[str]) -> DictConfig:
        self.composed.append(overrides)
        return self.loader.load_sweep_config(master, overrides)  # type: ignore[attr-defined]


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


def _sweeper(
    loader: object, folder: Path, batch: int | None
) -> tuple[NslbSweeper, Recorder, Loader]:
    sweeper = NslbSweeper(max_batch_size=batch, params=PRESET)
    launcher, counting = Recorder(), Loader(loader)
    sweeper.config = _master(loader, folder)
    sweeper.launcher = launcher
    sweeper.hydra_context = HydraContext(config_loader=counting, callbacks=None)  # type: ignore[arg-type]
    return sweeper, launcher, counting


def test_nslb_sweeps_with_its_own_sweeper_and_launcher_and_studies_with_optunas() -> None:
    register_options()
    with initialize_config_module(CONFIG_MODULE, version_base="1.3"):
        sweep = compose("config", return_hydra_config=True)
        tuning = compose("config", overrides=["hparams_search=cd_ucb"], return_hydra_config=True)
    assert sweep.hydra.sweeper._target_ == NSLB_SWEEPER
    assert sweep.hydra.launcher._target_ == NSLB_LAUNCHER == tuning.hydra.launcher._target_
    assert study.is_study(tuning.hydra.sweeper)


@pytest.mark.parametrize(
    "point",
    [
        ["agent=cd_ucb", "agent.tau=50"],
        ["agent.tau=4", "agent=cd_ts", "run.n_seeds=3"],  # a value before its group choice
        ["agent=umts", "agent.num_particles=10", "env.sigma=0.3", "env.dynamics=fixed"],
        ["agent=cd_ucb", "++agent.tau=8", "name=mine", "hydra.sweep.dir=elsewhere"],
        ["env=piecewise/problem_2", "env.horizon=300", "agent=glr_klucb"],
        ["agent=exp3s", "agent.gamma=null", "env.reward=bernoulli"],
        ["agent=mts", "+agent.extra=1"],  # an addition: composed whole
        ["agent=cd_ucb", "run.n_seeds=2", "run={n_seeds:3}"],  # a section after its key
        ["agent=cd_ucb", "agent.tau=5", "agent={tau:9}"],
        ["run.seed=3", "~run"],
    ],
)
def test_jobs_sharing_their_groups_get_the_config_hydra_composes_for_each(
    loader: object, point: list[str], tmp_path: Path
) -> None:
    """Each job's config, the second time from the shared composition, equals Hydra's own
    (``load_sweep_config``), its record of the job's overrides and folder name included."""
    master = _master(loader, tmp_path)
    configs = JobConfigs(loader, master)  # type: ignore[arg-type]
    for _ in range(2):
        try:
            expected = loader.load_sweep_config(master, point)  # type: ignore[attr-defined]
        except Exception as err:  # noqa: BLE001 (the same refusal either way)
            with pytest.raises(type(err)):
                configs(point)
            return
        assert OmegaConf.to_container(configs(point)) == OmegaConf.to_container(expected)


def test_every_job_is_checked_before_the_first_batch_launches(
    loader: object, tmp_path: Path
) -> None:
    sweeper, launcher, _ = _sweeper(loader, tmp_path, batch=1)  # the bad job in batch 2
    with pytest.raises(
        ConfigError, match=r"> 0, got -1 \(in sweep job agent=cd_ucb env.horizon=-1\)"
    ):
        sweeper.sweep(["env.horizon=5,-1"])
    assert launcher.batches == []
    assert not (tmp_path / "multirun.yaml").exists()


def test_the_jobs_are_launched_in_batches_each_choice_of_groups_composed_once(
    loader: object, tmp_path: Path
) -> None:
    sweeper, launcher, counting = _sweeper(loader, tmp_path, batch=4)

    sweeper.sweep(["env.horizon=1,2", "++env.sigma=0.5"])

    assert [(first, len(batch)) for first, batch in launcher.batches] == [(0, 4), (4, 4), (8, 2)]
    jobs = [job for _, batch in launcher.batches for job in batch]
    assert jobs[:3] == [
        ["agent=cd_ucb", "env.horizon=1", "++env.sigma=0.5"],
        ["agent=cd_ucb", "env.horizon=2", "++env.sigma=0.5"],
        ["agent=cd_ts", "env.horizon=1", "++env.sigma=0.5"],
    ]
    assert counting.composed == [[f"agent={a}"] for a in PRESET["agent"].split(",")]
    assert OmegaConf.load(tmp_path / "multirun.yaml") == sweeper.config


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
