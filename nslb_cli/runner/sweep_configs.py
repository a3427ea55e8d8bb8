"""The config of each job of a sweep as Hydra's launchers ask for it, one composition per
choice of config groups.

A launcher asks Hydra's config loader for every job's config (``load_sweep_config``): the
master config's Hydra overrides and the job's overrides, composed from the YAML files, about
0.05 s a job, most of a small job's cost (a sweep of 100 jobs over ``agent.tau`` spent 5 s
composing). Jobs that choose the same groups differ only in values, which Hydra sets after
composing (``ConfigLoaderImpl._apply_overrides_to_config``). :class:`SweepConfigs` composes
each choice of groups once, then gives every job a copy with its values set by that same
Hydra function, and the job's records Hydra derives from its overrides (``hydra.overrides.task``
and ``hydra.job.override_dirname``) rebuilt from all of them. Tests compare every job's config
with Hydra's own composition.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from hydra._internal.config_loader_impl import ConfigLoaderImpl, get_overrides_dirname
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

from nslb_cli.runner.compose import parse_overrides, sets_a_value, values_apart

Loader = Callable[[ConfigLoaderImpl, DictConfig, list[str]], DictConfig]
"""``ConfigLoaderImpl.load_sweep_config``'s signature."""


class SweepConfigs:
    """A stand-in for ``ConfigLoaderImpl.load_sweep_config`` (``hydras``: the original) that
    remembers compositions. A job whose values cannot be set apart (a section replaced or
    deleted, a key added: :func:`~nslb_cli.runner.compose.values_apart`) is composed by the
    original, where the order of its overrides decides."""

    def __init__(self, hydras: Loader) -> None:
        self._hydras = hydras
        self._composed: dict[tuple[str, ...], DictConfig] = {}

    def __call__(
        self, loader: ConfigLoaderImpl, master: DictConfig, sweep_overrides: list[str]
    ) -> DictConfig:
        """The config of the job of ``sweep_overrides`` in the sweep of ``master``."""
        hydra_overrides: Any = OmegaConf.to_container(master.hydra.overrides.hydra)
        overrides = [*hydra_overrides, *sweep_overrides]
        parsed = parse_overrides(overrides)
        values = [o for o in parsed if sets_a_value(o)]
        others = [o for o in parsed if not sets_a_value(o)]
        if not values_apart(parsed):
            return self._hydras(loader, master, sweep_overrides)
        choices = tuple(o.input_line or "" for o in others)
        if choices not in self._composed:
            self._composed[choices] = loader.load_configuration(
                config_name=master.hydra.job.config_name,
                overrides=list(choices),
                run_mode=RunMode.RUN,
            )
        config = copy.deepcopy(self._composed[choices])
        ConfigLoaderImpl._apply_overrides_to_config(values, config)
        task = [o for o in parsed if not o.is_hydra_override()]
        naming = config.hydra.job.config.override_dirname
        config.hydra.overrides.task = [o.input_line for o in task]
        config.hydra.job.override_dirname = get_overrides_dirname(
            overrides=task,
            kv_sep=naming.kv_sep,
            item_sep=naming.item_sep,
            exclude_keys=naming.exclude_keys,
        )
        OmegaConf.copy_cache(from_config=master, to_config=config)
        return config
