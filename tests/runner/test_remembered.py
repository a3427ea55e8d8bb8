"""Compositions remembered for one ``nslb run`` (runner.remembered) are Hydra's own: asked
again, in the launcher's order or with Hydra's trailing ``hydra.mode``, the copy equals a
fresh composition, hydra node and flags included."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from hydra import initialize_config_module
from hydra._internal.config_loader_impl import ConfigLoaderImpl
from hydra.core.global_hydra import GlobalHydra
from hydra.errors import HydraException
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf, open_dict

from nslb_cli.runner.compose import CONFIG_MODULE, CONFIG_NAME, register_options
from nslb_cli.runner.remembered import RememberedCompositions

HYDRAS = ConfigLoaderImpl.load_configuration
# (what the check asks, what the launcher asks next): the same composition
ASKED_AGAIN = [
    (
        ["agent=cd_ucb", "experiment=paper/known", "hydra.sweep.dir=/tmp/a"],
        ["hydra.sweep.dir=/tmp/a", "agent=cd_ucb", "experiment=paper/known"],
    ),
    (
        ["agent=umts", "run.n_seeds=3", "hydra.run.dir=/tmp/b"],
        ["agent=umts", "run.n_seeds=3", "hydra.run.dir=/tmp/b", "hydra.mode=RUN"],
    ),
    (
        ["experiment=paper/prior", "hydra/launcher=basic", "agent.tau=4", "agent=cd_ucb"],
        ["hydra/launcher=basic", "experiment=paper/prior", "agent.tau=4", "agent=cd_ucb"],
    ),
    (
        ["env=piecewise", "agent=sw_ucb", "hydra.job.chdir=false"],
        ["hydra.job.chdir=false", "env=piecewise", "agent=sw_ucb", "hydra.mode=MULTIRUN"],
    ),
]


@pytest.fixture(scope="module")
def loader() -> Iterator[ConfigLoaderImpl]:
    register_options()
    with initialize_config_module(CONFIG_MODULE, version_base="1.3"):
        yield GlobalHydra.instance().config_loader()  # type: ignore[misc]


def same(got: DictConfig, expected: DictConfig) -> None:
    assert OmegaConf.to_yaml(got) == OmegaConf.to_yaml(expected)
    assert OmegaConf.is_struct(got) == OmegaConf.is_struct(expected)
    assert OmegaConf.is_readonly(got.hydra) == OmegaConf.is_readonly(expected.hydra)


def counting(calls: list[list[str]]) -> Callable[..., DictConfig]:
    """Hydra's composition, each request's overrides appended to ``calls``."""

    def counted(
        self: ConfigLoaderImpl, name: str, overrides: list[str], *rest: object
    ) -> DictConfig:
        calls.append(overrides)
        return HYDRAS(self, name, overrides, *rest)  # type: ignore[arg-type]

    return counted


@pytest.mark.parametrize(("first", "again"), ASKED_AGAIN)
def test_a_composition_asked_again_is_hydras_own(
    loader: ConfigLoaderImpl, first: list[str], again: list[str]
) -> None:
    calls: list[list[str]] = []
    ours = RememberedCompositions(counting(calls))
    checked = ours(loader, CONFIG_NAME, list(first), RunMode.RUN, False, True)
    same(checked, HYDRAS(loader, CONFIG_NAME, list(first), RunMode.RUN))
    launched = ours(loader, CONFIG_NAME, list(again), RunMode.RUN, True, False)
    same(launched, HYDRAS(loader, CONFIG_NAME, list(again), RunMode.RUN))
    assert calls == [first], "the second request is the remembered composition"


def test_a_caller_changing_its_copy_changes_no_later_one(loader: ConfigLoaderImpl) -> None:
    ours = RememberedCompositions(HYDRAS)
    overrides = ["agent=cd_ucb", "hydra.sweep.dir=/tmp/c"]
    first = ours(loader, CONFIG_NAME, overrides, RunMode.RUN)
    with open_dict(first):
        del first["hydra"]  # as hydra.compose does with the config it is given
    first.agent.tau = 3
    second = ours(loader, CONFIG_NAME, overrides, RunMode.RUN)
    same(second, HYDRAS(loader, CONFIG_NAME, overrides, RunMode.RUN))


def test_other_requests_are_composed_anew(loader: ConfigLoaderImpl) -> None:
    calls: list[list[str]] = []
    ours = RememberedCompositions(counting(calls))
    ours(loader, CONFIG_NAME, ["agent=mts", "run.seed=1"], RunMode.MULTIRUN)
    ours(loader, CONFIG_NAME, ["run.seed=1", "agent=mts"], RunMode.MULTIRUN)  # another order
    ours(loader, CONFIG_NAME, ["agent=mts", "run.seed=1"], RunMode.RUN)  # a multirun's: no
    ours(loader, CONFIG_NAME, ["agent=mts", "run.seed=1", "env.horizon=9"], RunMode.RUN)
    ours(loader, CONFIG_NAME, ["agent=exp4s"], RunMode.RUN, True, False)  # not validated
    ours(loader, CONFIG_NAME, ["agent=exp4s"], RunMode.MULTIRUN)
    assert len(calls) == 6


@pytest.mark.parametrize(
    "overrides", [["experiment=paper/fixed", "hydra.sweep.dir=/tmp/d"], ["agent=umts"]]
)
def test_a_multirun_is_given_a_single_runs_validated_composition(
    loader: ConfigLoaderImpl, overrides: list[str]
) -> None:
    """The check composes a preset's overrides as a single run, the launcher asks for the
    same as a multirun's master config: Hydra's own multirun composition, not composed again."""
    calls: list[list[str]] = []
    ours = RememberedCompositions(counting(calls))
    ours(loader, CONFIG_NAME, list(overrides), RunMode.RUN)
    served = ours(loader, CONFIG_NAME, list(overrides), RunMode.MULTIRUN, True, True)
    same(served, HYDRAS(loader, CONFIG_NAME, list(overrides), RunMode.MULTIRUN))
    assert calls == [overrides]


def test_a_request_setting_the_whole_hydra_node_is_composed_in_its_own_order(
    loader: ConfigLoaderImpl,
) -> None:
    """``hydra={…}`` is not a Hydra override to Hydra: its order against ``hydra.*`` values
    decides the job's name, so neither order is given the other's composition."""
    ours = RememberedCompositions(HYDRAS)
    whole, value = "hydra={job:{name:whole}}", "hydra.job.name=value"
    for overrides in ([whole, value], [value, whole]):
        got = ours(loader, CONFIG_NAME, list(overrides), RunMode.RUN)
        same(got, HYDRAS(loader, CONFIG_NAME, list(overrides), RunMode.RUN))


def test_an_unvalidated_composition_is_not_given_where_validation_is_asked(
    loader: ConfigLoaderImpl,
) -> None:
    ours = RememberedCompositions(HYDRAS)
    sweep = ["agent=cd_ucb", "agent.tau=1,2"]
    with pytest.raises(HydraException):
        HYDRAS(loader, CONFIG_NAME, sweep, RunMode.RUN, True, True)
    ours(loader, CONFIG_NAME, sweep, RunMode.RUN, True, False)  # composed, not validated
    with pytest.raises(HydraException):
        ours(loader, CONFIG_NAME, sweep, RunMode.RUN, True, True)
