"""``experiment=offline/data_size`` (docs/guide/experiments.md): the paper's Markov world, models
learned from 10^2 … 10^5 logged rounds, and beside them, once, the known model and CD-TS: the
jobs nslb's sweeper makes of its grids, and ``make offline``."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

from hydra import compose, initialize_config_module
from hydra.core.global_hydra import GlobalHydra
from hydra.core.plugins import Plugins
from hydra.core.utils import JobReturn, JobStatus
from hydra.plugins.launcher import Launcher
from hydra.types import HydraContext, RunMode

from nslb_cli.runner.compose import CONFIG_MODULE, CONFIG_NAME, check_command_line, register_options
from tests.helpers.paths import REPO

PRESET = "experiment=offline/data_size"
ROUNDS = ("100", "1000", "10000", "100000")


class Recorder(Launcher):
    """A launcher that runs nothing: it records the jobs it is given."""

    def __init__(self) -> None:
        self.jobs: list[list[str]] = []

    def setup(self, **_: object) -> None:
        raise AssertionError("the test gives the sweeper its launcher")

    def launch(
        self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int
    ) -> Sequence[JobReturn]:
        self.jobs += [list(job) for job in job_overrides]
        return [JobReturn(status=JobStatus.COMPLETED, _return_value=0.0) for _ in job_overrides]


def swept_jobs(folder: Path, *arguments: str) -> list[dict[str, str]]:
    """The jobs nslb's sweeper launches for the preset and ``arguments``, each as its
    overrides (key -> value), the preset's own key left out."""
    register_options()
    with initialize_config_module(CONFIG_MODULE, version_base="1.3"):
        loader = GlobalHydra.instance().config_loader()
        overrides = [PRESET, *arguments, f"hydra.sweep.dir={folder}"]
        master = loader.load_configuration(CONFIG_NAME, overrides, RunMode.MULTIRUN)
        Plugins.instance()
        from hydra_plugins.nslb_sweep.sweeper import NslbSweeper

        settings = master.hydra.sweeper
        sweeper = NslbSweeper(settings.max_batch_size, settings.params, settings.grids)
        sweeper.config, sweeper.launcher = master, Recorder()
        sweeper.hydra_context = HydraContext(config_loader=loader, callbacks=None)  # type: ignore[arg-type]
        sweeper.sweep([PRESET, *arguments])
    jobs = [dict(o.split("=", 1) for o in job) for job in sweeper.launcher.jobs]
    return [{k: v for k, v in job.items() if k != "experiment"} for job in jobs]


def test_the_preset_is_the_papers_markov_world_with_20_seeds() -> None:
    with initialize_config_module(CONFIG_MODULE, version_base="1.3"):
        cfg = compose(CONFIG_NAME, overrides=[PRESET], return_hydra_config=True)
        known = compose(CONFIG_NAME, overrides=["experiment=paper/known"])
    assert cfg.name == "offline/data_size" and cfg.hydra.mode.name == "MULTIRUN"
    assert cfg.env == known.env, "paper/known's world: markov, K = S = 5, T = 2000, 0.005"
    assert cfg.run.n_seeds == 20 and cfg.hydra.sweep.dir == "outputs/offline/data_size"


def test_the_known_model_runs_once_beside_each_amount_of_logs(tmp_path: Path) -> None:
    jobs = swept_jobs(tmp_path)
    learned = [(j["env.offline_rounds"], j["agent"]) for j in jobs if j["env.model"] == "learned"]
    assert learned == [(n, agent) for n in ROUNDS for agent in ("mts", "umts")]
    known = [j for j in jobs if j["env.model"] == "known"]
    assert [j["agent"] for j in known] == ["mts", "umts", "cd_ts"], "after the learned grid"
    assert not any("env.offline_rounds" in j for j in known), "once, not once per amount"
    assert check_command_line([PRESET], multirun=False).jobs == len(jobs) == 11


def test_the_command_line_applies_to_every_grid(tmp_path: Path) -> None:
    jobs = swept_jobs(tmp_path, "agent=mts", "run.n_seeds=5")
    assert [(j.get("env.offline_rounds"), j["agent"]) for j in jobs] == [
        *((n, "mts") for n in ROUNDS),
        (None, "mts"),
    ], "agent=mts replaces each grid's agents"
    assert all(j["run.n_seeds"] == "5" for j in jobs)
    assert check_command_line([PRESET, "agent=mts"], multirun=True).jobs == 5


def test_make_offline_runs_the_preset_with_the_extra_overrides_then_plots() -> None:
    outside = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL")}
    result = subprocess.run(
        ["make", "-n", "--no-print-directory", "offline", "OFFLINE_ARGS=run.n_seeds=5"],
        cwd=REPO, capture_output=True, text=True, check=True, env=outside,
    )  # fmt: skip
    commands = [line.split()[1:] for line in result.stdout.splitlines()]
    assert commands == [
        ["run", PRESET, "run.n_seeds=5"],
        ["plot", "outputs/offline", "--out", "outputs/offline/figures", "--paper"],
    ]
