"""The launcher's job configs composed once per choice of groups (runner.sweep_configs) are
Hydra's own, job by job, hydra node included."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hydra import initialize_config_module
from hydra._internal.config_loader_impl import ConfigLoaderImpl
from hydra.core.global_hydra import GlobalHydra
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

from nslb_cli.runner.compose import CONFIG_MODULE, CONFIG_NAME, register_options
from nslb_cli.runner.sweep_configs import SweepConfigs

COMMAND = ["hydra.sweep.dir=/tmp/somewhere", "run.n_seeds=3"]
JOBS = [
    ["agent=cd_ucb", "agent.tau=50"],
    ["agent=cd_ucb", "agent.tau=100"],  # the same groups: a copy of the first composition
    ["agent=cd_ucb", "agent.tau=100", "agent.gamma=0.1", "env.horizon=70"],
    ["agent=mts"],
    ["agent=umts", "agent.num_particles=10", "env.model=prior"],
    ["env=piecewise", "agent=sw_ucb", "agent.tau=30"],
    ["experiment=paper/fixed", "agent=mts", "env.horizon=90"],
    ["name=elsewhere", "agent=mts", "run.seed=4"],
    ["agent=cd_ucb", "++agent.tau=7"],
    ["agent=exp4s", "+agent.extra=1"],  # an addition: Hydra's own composition
    # a whole section after one of its keys: Hydra's order decides (Hydra's own composition)
    ["agent=cd_ucb", "run.n_seeds=2", "run={n_seeds:3}"],
    ["run.n_seeds=2", "++run={n_seeds:1}"],
    ["agent=cd_ucb", "agent.tau=5", "agent={tau:9}"],
    ["run.seed=3", "~run"],
]


@pytest.fixture(scope="module")
def loader() -> Iterator[ConfigLoaderImpl]:
    register_options()
    with initialize_config_module(CONFIG_MODULE, version_base="1.3"):
        yield GlobalHydra.instance().config_loader()  # type: ignore[misc]


def master(loader: ConfigLoaderImpl) -> DictConfig:
    return loader.load_configuration(CONFIG_NAME, overrides=COMMAND, run_mode=RunMode.MULTIRUN)


def test_every_job_config_is_hydras_own(loader: ConfigLoaderImpl) -> None:
    sweep = master(loader)
    ours = SweepConfigs(ConfigLoaderImpl.load_sweep_config)
    for job in JOBS:
        try:
            expected = loader.load_sweep_config(sweep, list(job))
        except Exception as refused:  # noqa: BLE001  (then ours must refuse it the same way)
            with pytest.raises(type(refused)):
                ours(loader, sweep, list(job))
            continue
        got = ours(loader, sweep, list(job))
        assert OmegaConf.to_yaml(got) == OmegaConf.to_yaml(expected), job
        assert OmegaConf.is_struct(got) == OmegaConf.is_struct(expected)
        assert got.hydra.job.override_dirname == expected.hydra.job.override_dirname
        assert list(got.hydra.overrides.task) == list(job)


def test_a_job_does_not_change_the_composition_the_next_one_copies(
    loader: ConfigLoaderImpl,
) -> None:
    sweep = master(loader)
    ours = SweepConfigs(ConfigLoaderImpl.load_sweep_config)
    first = ours(loader, sweep, ["agent=cd_ucb", "agent.tau=50"])
    first.agent.threshold = 123.0
    second = ours(loader, sweep, ["agent=cd_ucb", "agent.tau=60"])
    assert second.agent.tau == 60 and second.agent.threshold is None
    assert first.agent.tau == 50
