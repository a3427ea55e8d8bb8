"""Compose ``conf/`` with Hydra: one job's config (``load``), a command line's check."""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hydra import compose, initialize_config_module
from hydra.core.config_search_path import ConfigSearchPath
from hydra.core.config_store import ConfigStore
from hydra.core.global_hydra import GlobalHydra
from hydra.core.hydra_config import HydraConfig
from hydra.core.object_type import ObjectType
from hydra.core.override_parser.types import Override
from hydra.core.plugins import Plugins
from hydra.plugins.config_source import ConfigResult, ConfigSource
from hydra.plugins.search_path_plugin import SearchPathPlugin
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from nslb_cli.agents import AGENTS
from nslb_cli.common.errors import ConfigError
from nslb_cli.common.paths import unwritable
from nslb_cli.common.registry import PluginError, Registry, params_defaults
from nslb_cli.envs import ENVIRONMENTS
from nslb_cli.runner import folders, study, sweep
from nslb_cli.runner.config import RunConfig, validate
from nslb_cli.runner.overrides import (
    COMPOSING,
    chooses,
    one_line,
    parse_overrides,
    refuse_deletions,
    refuse_group_mistakes,
    refuse_several_values,
    refuse_swept_hydra_settings,
    refuse_unknown_keys,
)
from nslb_cli.store.folder import OutputConflict, refuse_foreign_files

CONFIG_MODULE = "nslb_cli.conf"
CONFIG_NAME = "config"

OmegaConf.register_new_resolver("nslb_folder", folders.folder_name, replace=True)
OmegaConf.register_new_resolver("nslb_job_folder", folders.job_folder, replace=True)
OmegaConf.register_new_resolver("nslb_direction", study.direction, replace=True)


def _option(registry: Registry, name: str) -> dict[str, Any]:
    """The config group option of ``name``: its ``Params`` defaults (``{name}`` alone if it
    cannot be loaded, so that choosing it reports why in ``validate``)."""
    try:
        return params_defaults(registry[name].Params)  # untyped: validate() checks them
    except (PluginError, OmegaConfBaseException):
        return {"name": name}


class BuiltInAgents(ConfigSource):
    """Hydra's options ``agent=NAME`` of nslb's own agents, made when Hydra loads one, so that
    only the agents a command chooses are imported."""

    @staticmethod
    def scheme() -> str:
        return "nslb-agents"

    def available(self) -> bool:
        return True

    @staticmethod
    def _name(config_path: str) -> str | None:
        group, _, name = config_path.strip("/").removesuffix(".yaml").partition("/")
        built_in = name in AGENTS and not AGENTS.foreign(name)
        return name if group == "agent" and built_in else None

    def is_group(self, config_path: str) -> bool:
        return config_path.strip("/") in ("", "agent")

    def is_config(self, config_path: str) -> bool:
        return self._name(config_path) is not None

    def list(self, config_path: str, results_filter: ObjectType | None) -> list[str]:
        if config_path.strip("/") == "":
            return ["agent"] if results_filter in (None, ObjectType.GROUP) else []
        if config_path.strip("/") != "agent" or results_filter == ObjectType.GROUP:
            return []
        return [name for name in AGENTS if not AGENTS.foreign(name)]

    def load_config(self, config_path: str) -> ConfigResult:
        name = self._name(config_path)
        assert name is not None, config_path
        node = OmegaConf.create(_option(AGENTS, name))
        return ConfigResult(self.provider, self.full_path(), node, {"package": None})


class BuiltInAgentsPath(SearchPathPlugin):
    """Puts ``BuiltInAgents`` in Hydra's search path, after nslb's ``conf/``."""

    def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
        search_path.append("nslb", f"{BuiltInAgents.scheme()}://")


Plugins.instance().register(BuiltInAgents)  # on import, as the resolvers above: every
Plugins.instance().register(BuiltInAgentsPath)  # composition of conf/ needs them


def register_options(arguments: Sequence[str] = ()) -> tuple[str, ...]:
    """Store a Hydra config group option for every plugin's environment and agent; return the
    plugins' problems, one line each. Call it before Hydra composes.

    Only the plugins that ``arguments`` name are imported, for their ``Params`` defaults; the
    others' option is their name alone (``validate`` fills in the defaults).
    """
    words = re.split(r"[\s=,()\[\]{}'\"]+", " ".join([*arguments, os.environ.get("COMP_LINE", "")]))
    return _register(frozenset(words))


@functools.cache
def _register(named: frozenset[str]) -> tuple[str, ...]:
    store = ConfigStore.instance()
    for group, registry in (("env", ENVIRONMENTS), ("agent", AGENTS)):
        for name in registry.declared():
            if name not in registry or registry.foreign(name):  # nslb's own: conf/, BuiltInAgents
                node = _option(registry, name) if name in named else {"name": name}
                store.store(group=group, name=name, node=node)
    return tuple(ENVIRONMENTS.problems() + AGENTS.problems())


def _composed(parsed: list[Override]) -> tuple[DictConfig, set[str]]:
    """The config of ``parsed``'s overrides but its sweeps, as Hydra composes a sweep's own config,
    and the keys the sweep gives several values. nslb's checks of the overrides come first.
    Call it inside Hydra's initialisation."""
    refuse_deletions(parsed)
    refuse_group_mistakes(parsed)
    groups = GlobalHydra.instance().config_loader().list_groups("")
    fixed = [o for o in parsed if not o.is_sweep_override()]
    try:
        defaults = compose(
            CONFIG_NAME,
            overrides=[o.input_line or "" for o in fixed if chooses(o, groups)],
            return_hydra_config=True,
        )
        swept = {o.get_key_element() for o in parsed if o.is_sweep_override()}
        grids = sweep.preset_grids(defaults.hydra.sweeper)
        swept |= {line.partition("=")[0] for grid in grids for line in grid}
        refuse_unknown_keys(parsed, defaults, groups, swept)
        base = compose(
            CONFIG_NAME, overrides=[o.input_line or "" for o in fixed], return_hydra_config=True
        )
    except ConfigError:
        raise
    except COMPOSING as err:
        raise ConfigError("overrides", one_line(err)) from None
    return base, swept


def load(overrides: list[str]) -> RunConfig:
    """The validated config of one job (no sweep) of ``overrides``; raise ``ConfigError``."""
    parsed = parse_overrides(overrides)
    register_options(overrides)
    with initialize_config_module(CONFIG_MODULE, version_base="1.3"):
        refuse_several_values(parsed)
        base, _ = _composed(parsed)
    return validate(base)


@dataclass(frozen=True)
class CommandLine:
    """What ``nslb run [-m] overrides`` will do: how many jobs, writing below ``output``."""

    jobs: int
    output: Path
    multirun: bool
    study: study.Plan | None = None
    """An Optuna study (``hparams_search=…``), else ``None``."""
    seeds: tuple[int, int] = (0, -1)
    """The first and last seed of the command line's config (``run.seed``, ``run.n_seeds``)."""


def check_command_line(overrides: list[str], multirun: bool) -> CommandLine:
    """Check ``nslb run [-m] overrides``: its overrides, a single run's config and memory, a
    study's search space, and the output folder; raise ``ConfigError`` at the first bad point.
    """
    parsed = parse_overrides(overrides)
    register_options(overrides)
    with initialize_config_module(CONFIG_MODULE, version_base="1.3"):
        base, swept = _composed(parsed)
        multirun = multirun or base.hydra.mode == RunMode.MULTIRUN
        preset = [f"{k}={v}" for k, v in (base.hydra.sweeper.get("params") or {}).items()]
        jobs = parse_overrides(preset) + parsed
        if not multirun:
            refuse_several_values(parsed)
            sweep.check_job(lambda _: base, overrides, [overrides])
        else:
            refuse_swept_hydra_settings(parsed)
            batch = base.hydra.sweeper.get("max_batch_size")
            if batch is not None and batch < 1:
                raise ConfigError(
                    "hydra.sweeper.max_batch_size", f"must be >= 1 or null, got {batch}"
                )
            if "hparams_search" in swept:
                raise ConfigError(
                    "hparams_search", "one study at a time: run each with hparams_search=NAME"
                )
        planned = (
            study.plan(base, overrides) if multirun and study.is_study(base.hydra.sweeper) else None
        )
        if planned is not None:  # Optuna's sweeper checks nothing: its search space's corners
            points = sweep.study_points(jobs)
            sweep.check_sweep(points, lambda point: compose(CONFIG_NAME, overrides=point))
        grids = [parse_overrides(grid) + parsed for grid in sweep.preset_grids(base.hydra.sweeper)]
        count = planned.trials if planned else sum(map(sweep.size, grids)) if multirun else 1
        key = "hydra.sweep.dir" if multirun else "hydra.run.dir"
        HydraConfig.instance().set_config(base)  # the folder names the chosen env option
        folder = str(base.hydra.sweep.dir if multirun else base.hydra.run.dir)
    _check_output(folder, key)
    seeds = (int(base.run.seed), int(base.run.seed) + int(base.run.n_seeds) - 1)
    return CommandLine(count, Path(folder), multirun, planned, seeds)


def _check_output(folder: str, key: str) -> None:
    """Refuse an output folder that is empty (the current folder: nslb would write among the
    user's files), cannot be created or written, or holds files nslb did not write."""
    if not folder.strip():
        raise ConfigError(key, "empty; give a folder for the results (e.g. outputs/mine)")
    reason = unwritable(Path(folder))
    if reason:
        raise ConfigError(key, reason)
    try:
        refuse_foreign_files(Path(folder), key)
    except OutputConflict as err:
        raise ConfigError(key, str(err).partition(": ")[2]) from None
    except OSError as err:  # e.g. a loop of symbolic links on the way
        raise ConfigError(key, f"cannot use {folder}: {err.strerror or err}") from None
