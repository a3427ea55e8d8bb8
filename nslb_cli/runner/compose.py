"""From a composed Hydra config to a validated :class:`RunConfig`.

Hydra composes ``conf/`` with the user's overrides; :func:`validate` then turns each
section into its parameter dataclass (``SyntheticParams``, ``UMTSParams``, …), which
rejects unknown keys (``+agent.typo=1`` included), wrong types and out-of-range values with
one line that names the key. :func:`check_command_line` does this for a run, and checks
the output folder, before Hydra starts; nslb's sweeper (``hydra_plugins/nslb_sweep``) does
it for every job of a sweep (:func:`check_job`) before the first job starts.

Config group options: ``env=NAME`` and ``agent=NAME`` exist for every registered
environment and agent (:mod:`nslb_cli.common.registry`). nslb's own are YAML files in ``conf/``,
which document each parameter and must equal the ``Params`` defaults (the tests check it);
an entry without a YAML file in ``conf/`` (a plugin's) gets its ``Params`` defaults as its
option, stored in Hydra's ConfigStore by :func:`register_options`. Either way the values go
through the same ``Params`` dataclass in :func:`validate`.
"""

from __future__ import annotations

import copy
import difflib
import functools
import hashlib
import itertools
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
from hydra import compose, initialize_config_module
from hydra.core.config_store import ConfigStore
from hydra.core.hydra_config import HydraConfig
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import ChoiceSweep, IntervalSweep, Override, RangeSweep
from hydra.core.plugins import Plugins
from hydra.errors import HydraException
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import ConfigKeyError, OmegaConfBaseException

# conf/launching.yaml chooses nslb's sweeper and launcher: importing them stores their options.
from hydra_plugins.nslb_sweep.launcher import NslbLauncher
from hydra_plugins.nslb_sweep.sweeper import NslbSweeper, NslbSweeperConf
from nslb_cli.agents import AGENTS
from nslb_cli.common import validators as check
from nslb_cli.common.apart import Ended, run_apart
from nslb_cli.common.paths import unwritable
from nslb_cli.common.registry import PluginError, Registry, describe_error
from nslb_cli.common.stopping import stopped_by
from nslb_cli.common.validators import ConfigError
from nslb_cli.envs import ENVIRONMENTS
from nslb_cli.jax_engine import agents as jax_agents
from nslb_cli.runner import memory, study
from nslb_cli.runner.engines import ENGINES, Engine
from nslb_cli.store.folder import OutputConflict, refuse_foreign_files
from nslb_cli.store.results import FORMATS

MAX_NAME = 200
"""Bytes of a run folder's name (the filesystem allows 255): a longer list of overrides is
shortened to a readable prefix and a hash of the whole."""
BLOCKED = ".nslb-blocked"
"""Where a sweep job whose folder is blocked (a file stands in its way) runs, to fail there."""


def folder_name(override_dirname: str) -> str:
    """Hydra's ``key=value,…`` override list as a folder name: ``+``/``++`` prefixes dropped
    and items re-sorted (``++agent.tau=5`` and ``agent.tau=5`` share a folder), a path value
    shown as its last part and a hash of the whole path (``env.data_dir=ml-100k-3f2a9c1e``:
    sweeping over folders gives a folder each), and a name longer than :data:`MAX_NAME`
    bytes cut to a prefix and a hash of the whole name (config.yaml keeps every value)."""
    items = re.split(r",(?=[^,=]+=)", override_dirname) if override_dirname else []
    name = ",".join(sorted(_shown(item.lstrip("+")) for item in items))
    if len(name.encode()) <= MAX_NAME:
        return name
    prefix = name.encode()[: MAX_NAME - 13].decode(errors="ignore").rstrip(",")
    return f"{prefix}-{_digest(name, 12)}"


def _shown(item: str) -> str:
    """One ``key=value`` of a folder name; a path value becomes ``<last part>-<hash>``."""
    key, sep, value = item.partition("=")
    bare = value.strip("'\"")
    if not sep or not ("/" in bare or bare.startswith("~")):
        return item
    path = os.path.abspath(os.path.expanduser(bare))
    return f"{key}={Path(path).name or 'root'}-{_digest(path, 8)}"


def _digest(text: str, digits: int) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:digits]


def job_folder(sweep_dir: str, env: str, agent: str, override_dirname: str) -> str:
    """A sweep job's folder below ``sweep_dir``: ``<env>/<agent>/<folder_name>``, or, when a
    file stands where that folder must go, a hidden folder of :data:`BLOCKED` where the job
    starts only to record that it failed (Hydra would otherwise stop the whole sweep)."""
    relative = f"{env}/{agent}/{folder_name(override_dirname)}"
    if _blocked(Path(sweep_dir) / relative):
        return f"{BLOCKED}/{_digest(relative, 12)}"
    return relative


def intended_folder(sweep_dir: str, env: str, agent: str, override_dirname: str) -> Path:
    """Where a sweep job's results belong (what :func:`job_folder` gives when unblocked)."""
    return Path(sweep_dir) / env / agent / folder_name(override_dirname)


def _blocked(folder: Path) -> bool:
    """Whether ``folder`` or one of its parents exists and is not a folder."""
    return any(p.exists() and not p.is_dir() for p in (folder, *folder.parents))


OmegaConf.register_new_resolver("nslb_folder", folder_name, replace=True)
OmegaConf.register_new_resolver("nslb_job_folder", job_folder, replace=True)
OmegaConf.register_new_resolver("nslb_direction", study.direction, replace=True)

NAME = re.compile(r"^[\w.-]+(/[\w.-]+)*$")
CONFIG_MODULE = "nslb_cli.conf"
CONFIG_NAME = "config"
SECTIONS = ("name", "env", "agent", "run")
MAX_SEED = 2**63 - 1
PLUGIN_SECONDS = 60.0  # a plugin's Params and memory declaration: the most a check may take


@dataclass
class RunSettings:
    """The ``run`` section: which seeds, and how they are simulated."""

    seed: int = 0
    n_seeds: int = 10
    batch_size: int = 100
    threads: int | None = None
    progress: bool | None = None
    overwrite: bool = False
    fail_fast: bool = False
    objective: str = "cum_regret"
    engine: str = "numpy"
    format: str = "csv"
    every: int = 1

    def __post_init__(self) -> None:
        check.non_negative(self.seed, "seed")
        check.one_of(self.engine, tuple(ENGINES), "engine")
        check.one_of(self.objective, study.DIRECTIONS, "objective")
        check.one_of(self.format, FORMATS, "format")
        check.positive(self.every, "every")
        check.int64(self.every, "every")
        check.positive(self.n_seeds, "n_seeds")
        check.positive(self.batch_size, "batch_size")
        if self.threads is not None:
            check.positive(self.threads, "threads")
        last = self.seed + self.n_seeds - 1
        check.require(
            last <= MAX_SEED,
            "seed",
            f"seeds are 64-bit integers: run.seed + run.n_seeds - 1 must be <= 2^63 - 1, "
            f"got {last}",
        )


@dataclass(frozen=True)
class RunConfig:
    """A validated job: environment and agent parameters, and the seeds to run."""

    name: str
    env: Any
    agent: Any
    run: RunSettings

    @property
    def seeds(self) -> np.ndarray:
        return self.run.seed + np.arange(self.run.n_seeds, dtype=np.int64)  # stop may be 2^63

    @property
    def engine(self) -> Engine:
        """The engine of ``run.engine`` (:mod:`nslb_cli.runner.engines`)."""
        return ENGINES[self.run.engine]


def _parameters(schema: type, node: Any, section: str) -> Any:
    """``node`` as an instance of ``schema``; every problem becomes a :class:`ConfigError`."""
    if not isinstance(node, DictConfig):
        raise ConfigError(section, f"must be a mapping, got {node!r}")
    try:
        return OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(schema), node))
    except ConfigKeyError as err:
        names = [f.name for f in fields(schema)]
        close = difflib.get_close_matches(str(err.key), names, n=1)
        guess = f" (did you mean {section}.{close[0]}?)" if close else ""
        named = f" '{node.get('name')}'" if node.get("name") else ""
        raise ConfigError(
            f"{section}.{err.key}",
            f"unknown key for {section}{named}{guess}; valid keys: " + ", ".join(names),
        ) from None
    except OmegaConfBaseException as err:
        key = f"{section}.{err.full_key}" if err.full_key else section
        raise ConfigError(key, str(err.msg).splitlines()[0]) from None
    except ConfigError as err:
        raise err.within(section) from None
    except (ArithmeticError, ValueError, TypeError) as err:  # e.g. a 400-digit float
        raise ConfigError(section, f"a value cannot be used: {describe_error(err)}") from None
    except BaseException as err:  # a plugin's __post_init__ may raise anything for a value
        if stopped_by(err) is not None:  # (SystemExit included): only a stop goes through
            raise
        raise ConfigError(section, f"{node.get('name')} refuses these values: "
                          f"{describe_error(err)}") from None  # fmt: skip


def _registered(node: Any, section: str, registry: Registry) -> Any:
    name = node.get("name") if isinstance(node, DictConfig) else None
    if not isinstance(name, str) or (name not in registry and registry.problem(name) is None):
        raise ConfigError(
            f"{section}.name", f"unknown {section} '{name}'; available: {', '.join(registry)}"
        )
    try:
        return registry[name]
    except PluginError as err:
        raise ConfigError(f"{section}.name", str(err)) from None


def container(cfg: DictConfig) -> dict[str, Any]:
    """A mapping config as plain Python values, interpolations resolved."""
    values = OmegaConf.to_container(cfg, resolve=True)
    assert isinstance(values, dict)
    return {str(key): value for key, value in values.items()}


def _has_yaml(group: str, name: str) -> bool:
    return resources.files(CONFIG_MODULE).joinpath(group).joinpath(f"{name}.yaml").is_file()


def _option(registry: Registry, name: str) -> dict[str, Any]:
    """The config group option of ``name``: its ``Params`` defaults (``{name}`` alone if it
    cannot be loaded, so that choosing it reports why in :func:`validate`)."""
    try:
        schema = OmegaConf.structured(registry[name].Params)
    except (PluginError, OmegaConfBaseException):
        return {"name": name}
    return dict(container(schema))  # untyped: validate() checks, as for YAML options


def register_options(arguments: Sequence[str] = ()) -> tuple[str, ...]:
    """Store a Hydra config group option for every registered environment and agent that has
    no YAML file in ``conf/`` (plugins), register nslb's sweeper and launcher with Hydra; return the
    plugins' problems, one line each.

    Call it before Hydra composes (Hydra hands the ConfigStore to its launchers' workers).
    Only the plugins that ``arguments`` (or a shell's completion request) name are imported,
    for their ``Params`` defaults: a run of nslb's own agents imports no plugin, and a
    plugin that blocks or fails is reported only where it is chosen. The others' option is
    their name alone (``validate`` fills in the defaults).
    """
    words = re.split(r"[\s=,()\[\]{}'\"]+", " ".join([*arguments, os.environ.get("COMP_LINE", "")]))
    return _register(frozenset(words))


@functools.cache
def _register(named: frozenset[str]) -> tuple[str, ...]:
    # Hydra finds plugins by listing the modules of the hydra_plugins package, which an
    # editable install (pip install -e) does not show: nslb names its own itself.
    Plugins.instance().register(NslbSweeper)
    Plugins.instance().register(NslbLauncher)
    store = ConfigStore.instance()
    for group, registry in (("env", ENVIRONMENTS), ("agent", AGENTS)):
        for name in registry.declared():
            if not _has_yaml(group, name):
                node = _option(registry, name) if name in named else {"name": name}
                store.store(group=group, name=name, node=node)
    return tuple(ENVIRONMENTS.problems() + AGENTS.problems())


def pairing_refusal(env: Any, agent: Any, env_name: str, agent_name: str) -> ConfigError | None:
    """Why agent class ``agent`` cannot play environment class ``env`` (``None`` if it can):
    per-arm learning on items that change every round, a latent model of another kind, or
    outcome laws the environment does not give."""
    if env.contextual and agent.fixed_arms:
        return ConfigError(
            "agent",
            f"{agent_name} learns each arm's rewards, but env={env_name} offers other "
            "items every round: choose an agent that uses contexts (mts, umts, cd_linucb, "
            "cd_lints, exp4s, sw_mucb, …)",
        )
    latent, needs = getattr(env, "latent", "discrete"), getattr(agent, "latent_model", None)
    if needs is not None and needs != latent:
        article = "an" if needs[:1] in tuple("aeiou") else "a"
        return ConfigError(
            "agent",
            f"{agent_name} needs {article} {needs} latent model, and env={env_name}'s "
            f"latent is {latent}: choose an environment with one, or an agent that needs "
            "none (larl, larl_etc, sw_ucb, glr_klucb, …)",
        )
    if getattr(agent, "needs_outcome_laws", False) and not getattr(env, "outcome_laws", False):
        return ConfigError(
            "agent",
            f"{agent_name} needs known outcome laws, which env={env_name} does not give: "
            "use env=switching_latent or env=movielens_genres",
        )
    return None


def validate(cfg: DictConfig) -> RunConfig:
    """Check a composed config and build its :class:`RunConfig`; raise :class:`ConfigError`."""
    unknown = sorted(set(map(str, cfg.keys())) - set(SECTIONS) - {"hydra"})
    if unknown:
        raise ConfigError(unknown[0], f"unknown top-level key; valid: {', '.join(SECTIONS)}")
    name = str(cfg.get("name"))
    if not NAME.match(name) or ".." in name.split("/"):
        raise ConfigError(
            "name",
            f"must be folder names of letters, digits, '_', '.', '-' joined by '/', "
            f"without '..'; got '{name}'",
        )
    env = _registered(cfg.get("env"), "env", ENVIRONMENTS)
    agent = _registered(cfg.get("agent"), "agent", AGENTS)
    refusal = pairing_refusal(env, agent, str(cfg.env.name), str(cfg.agent.name))
    if refusal is not None:
        raise refusal
    config = RunConfig(
        name=name,
        env=_parameters(env.Params, cfg.env, "env"),
        agent=_parameters(agent.Params, cfg.agent, "agent"),
        run=_parameters(RunSettings, cfg.get("run"), "run"),
    )
    refused = config.engine.refusal(config.env, config.agent)
    if refused:
        raise ConfigError(*refused)
    return config


def one_line(err: BaseException) -> str:
    """A Hydra/OmegaConf error message folded onto one line, without its debugging lines."""
    text = str(err)
    if text.startswith("Error merging override") and err.__cause__ is not None:
        text += f": {err.__cause__}"  # the reason (a value of the wrong type, say)
    lines = [line.strip() for line in text.split("Config search path")[0].splitlines()]
    kept = [
        line
        for line in lines
        if line and not line.startswith(("full_key:", "object_type=", "reference_type="))
    ]
    return " ".join(kept).replace("Available options in", "— available options in")


GROUPS = ("env", "agent", "experiment", "hparams_search")  # a run chooses one option of each
HOME = re.compile(r"^([^=~][^=]*)=~(?=/|$)")


def expand_home(overrides: list[str]) -> list[str]:
    """``key=~/path`` -> ``key=/home/me/path``: the shell does not expand ``~`` after ``=``,
    and Hydra's grammar rejects it."""
    return [HOME.sub(lambda m: f"{m.group(1)}={Path.home()}", item) for item in overrides]


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


def parse_overrides(overrides: list[str]) -> list[Override]:
    """The parsed overrides; an unparsable one is a :class:`ConfigError` naming it."""
    parser = OverridesParser.create()
    for item in overrides:
        try:
            parser.parse_overrides([item])
        except (HydraException, OmegaConfBaseException, ValueError) as err:
            reason = one_line(err).split(" See https")[0]
            reason = reason.replace(f"Error parsing override '{item}' ", "")
            raise ConfigError(
                "overrides",
                f"cannot parse '{item}' ({reason}); write key=value, and quote a value with "
                f"special characters: 'key=\"value\"'",
            ) from None
    parsed = parser.parse_overrides(overrides)
    for override in parsed:
        key = override.get_key_element()
        if not override.key_or_group:
            raise ConfigError("overrides", f"'{override.input_line}' has no key: write key=value")
        value = override.value()
        if key in GROUPS and isinstance(value, list):
            raise ConfigError(
                key,
                f"'{override.input_line}' chooses several; a run has one {key}: to run "
                f"each, sweep with -m {key}={','.join(map(str, value))}",
            )
    return parsed


def refuse_deletions(parsed: list[Override]) -> None:
    """Refuse ``~env.horizon`` and the like: a run records every value it used (in
    ``config.yaml`` and its folder's name), and a deleted one would be missing there."""
    for override in parsed:
        if override.is_delete() and not override.key_or_group.startswith("hydra"):
            raise ConfigError(
                override.key_or_group,
                f"'{override.input_line}' deletes a setting, and every run records the "
                f"value it used: give it a value ({override.key_or_group}=…) or leave it out "
                "for its default",
            )


def refuse_swept_hydra_settings(parsed: list[Override]) -> None:
    """Refuse a sweep over one of Hydra's own settings (``hydra.…=a,b``), which Hydra's
    sweeps cannot do; a preset's ``hydra.sweeper.params.KEY`` is swept as ``KEY=a,b``."""
    for override in parsed:
        if override.is_hydra_override() and override.is_sweep_override():
            key = override.key_or_group
            own = key.removeprefix("hydra.sweeper.params.")
            values = (override.input_line or "").partition("=")[2]
            hint = f"sweep {own}={values} instead" if own != key else "give it one value"
            raise ConfigError(
                key, f"'{override.input_line}' sweeps one of Hydra's own settings: {hint}"
            )


def refuse_several_values(parsed: list[Override]) -> None:
    """``nslb run run.n_seeds=3,4`` without ``-m``: several values of a key for one run."""
    for override in parsed:
        if override.is_sweep_override() and not override.is_hydra_override():
            line = override.input_line or ""
            raise ConfigError(
                override.key_or_group,
                f"'{line}' gives several values, and a run has one: to run each, sweep with "
                f"-m {line}",
            )


def refuse_swept_section_keys(parsed: list[Override], base: DictConfig) -> None:
    """``horizon=3,4``: a section's key given several values without its section, refused
    naming them all (write ``env.horizon=3,4``), not the first job that fails on it."""
    for override in parsed:
        key = override.key_or_group
        plain = not (override.is_add() or override.is_force_add() or override.is_delete())
        if not (plain and override.is_sweep_override()) or "." in key or key in base:
            continue
        owner = _owning_section(base, key)
        if owner is not None:
            line = override.input_line or ""
            raise ConfigError(key, f"'{line}' is not a top-level key: write {owner}.{line}")


def _owning_section(config: DictConfig, key: str) -> str | None:
    """The first section of ``config`` (:data:`SECTIONS`) that has the key ``key``."""
    return next(
        (s for s in SECTIONS if isinstance(config.get(s), DictConfig) and key in config[s]), None
    )


def _sweep_points(overrides: list[str], multirun: bool) -> tuple[list[list[str]], DictConfig]:
    """The override list of every job Hydra would launch, and the composed base config."""
    base = compose(CONFIG_NAME, overrides=_non_sweep(overrides), return_hydra_config=True)
    if not (multirun or base.hydra.mode == RunMode.MULTIRUN):
        return [overrides], base
    preset = [f"{k}={v}" for k, v in (base.hydra.sweeper.get("params") or {}).items()]
    parsed = parse_overrides(preset + overrides)
    for override in parsed:
        if override.get_key_element() == "hparams_search" and override.is_sweep_override():
            raise ConfigError(
                "hparams_search", "one study at a time: run each with hparams_search=NAME"
            )
    if study.is_study(base.hydra.sweeper):
        study.plan(base, overrides)  # a study that cannot run is refused before its jobs
        return _study_points(parsed), base
    return basic_sweep(parsed), base


def basic_sweep(parsed: list[Override]) -> list[list[str]]:
    """The jobs of Hydra's basic sweeper, in its order: each key's values (a later override
    of a key replaces an earlier one in its place), the first key's varying slowest
    (``itertools.product``); ``a=1,2 b=x,y`` gives ``a=1 b=x``, ``a=1 b=y``, ``a=2 b=x``, ….
    nslb's sweeper (``hydra_plugins/nslb_sweep``) launches these jobs."""
    values: dict[str, list[str]] = {}
    for override in parsed:
        key = override.get_key_element()
        if not override.is_sweep_override():
            values[key] = [f"{key}={override.get_value_element_as_str()}"]
        elif override.is_discrete_sweep():
            values[key] = [f"{key}={value}" for value in override.sweep_string_iterator()]
        else:
            raise ConfigError(
                key,
                f"'{override.input_line}': a sweep takes a list or range(…); interval(…) is "
                "a study's search space (hparams_search=…)",
            )
    return [list(job) for job in itertools.product(*values.values())]


def _study_points(parsed: list[Override]) -> list[list[str]]:
    """The jobs that stand for an Optuna study's search space: every parameter at its lower
    end, then each parameter in turn at each of its other ends (or choices)."""
    fixed = [o.input_line for o in parsed if not o.is_sweep_override() and o.input_line]
    ends: dict[str, list[str]] = {}
    for override in (o for o in parsed if o.is_sweep_override()):
        key, value = override.get_key_element(), override.value()
        if key in GROUPS:
            raise ConfigError(
                key,
                f"a study tunes one {key}, but the command line (or its experiment preset) "
                f"sweeps {key} over several: drop the list or the preset",
            )
        if isinstance(value, IntervalSweep):
            ends[key] = [str(value.start), str(value.end)]
        elif isinstance(value, RangeSweep):
            ends[key] = [str(value.start), str(value.stop)]
        elif isinstance(value, ChoiceSweep):
            ends[key] = [str(choice) for choice in value.list]
        else:
            raise ConfigError(key, f"'{override.input_line}' is not a search space Optuna takes")
    lows = {key: values[0] for key, values in ends.items()}
    points = [fixed + [f"{k}={v}" for k, v in lows.items()]]
    for key, values in ends.items():
        for value in values[1:]:
            point = {**lows, key: value}
            points.append(fixed + [f"{k}={v}" for k, v in point.items()])
    return points


def _swept_group_hint(overrides: list[str]) -> str:
    """Hydra applies the non-swept overrides to the default group choice first, so
    ``-m agent=cd_ucb,cd_ts agent.gamma=0.1`` fails on the default agent's config; ``++``
    sets the key whichever agent is chosen. Say so when that is the likely cause."""
    parsed = parse_overrides(overrides)
    swept = {o.get_key_element() for o in parsed if o.is_sweep_override()}
    for override in parsed:
        key = override.get_key_element()
        group = key.split(".")[0]
        line = override.input_line or ""
        if "." in key and group in swept and not line.startswith("+"):
            return (
                f" (the sweep over {group} applies {key} to the default {group} first: "
                f"write ++{line} to set it in each swept {group})"
            )
    return ""


def _unknown_key(
    overrides: list[str], err: Exception, composed: Callable[[list[str]], DictConfig]
) -> ConfigError | None:
    """Hydra refuses ``agent.taux=3`` as a key its config lacks and advises
    ``+agent.taux=3``, which nslb refuses in turn; give that refusal at once (the key
    unknown, the valid ones, a close match) instead of the advice. ``composed`` composes
    the (first) job of a command line."""
    found = re.match(r"Could not override '([^']+)'", one_line(err))
    key = found.group(1) if found else str(getattr(err, "full_key", None) or "")
    if key.split(".")[0] not in SECTIONS:
        return _section_key(overrides, key, composed)
    added = [f"++{o}" if o.split("=", 1)[0] == key else o for o in overrides]
    try:
        validate(composed(added))
    except ConfigError as refused:
        return refused if refused.key == key else None
    except (HydraException, OmegaConfBaseException, ValueError):
        return None
    return None


def _section_key(
    overrides: list[str], key: str, composed: Callable[[list[str]], DictConfig]
) -> ConfigError | None:
    """``engine=jax`` for ``run.engine=jax``: a key of a section given without it, which
    Hydra would advise to append as a new top-level key (refused in turn)."""
    given = [o for o in overrides if o.split("=", 1)[0] == key]
    if "." in key or not given:
        return None
    try:
        config = composed([o for o in overrides if o not in given])
    except (HydraException, OmegaConfBaseException, ValueError):
        return None
    owner = _owning_section(config, key)
    if owner is None:
        return None
    value = given[-1].split("=", 1)[1]
    return ConfigError(key, f"'{given[-1]}' is not a top-level key: write {owner}.{key}={value}")


def _jax_only(err: Exception) -> ConfigError | None:
    """``agent=x`` where a package declares only a JAX class for ``x``: Hydra finds no
    option ``agent/x``; say what the package lacks."""
    found = re.search(r"Could not find 'agent/([^']+)'", one_line(err))
    if not found or found.group(1) not in jax_agents.JAX_AGENTS.declared():
        return None
    name = found.group(1)
    return ConfigError(
        "agent",
        f"'{name}' is declared as a JAX agent only (entry-point group {jax_agents.GROUP}); "
        "an agent needs its numpy class too, declared under nslb.agents (nslb_cli.api)",
    )


def _group_path(overrides: list[str], err: Exception) -> ConfigError | None:
    """``experiment/paper=fixed`` takes a folder of presets for a config group, and Hydra
    advises ``+experiment/paper=fixed``, which adds a second preset: say how to choose it."""
    found = re.match(r"Could not override '((\w+)/([^']+))'", one_line(err))
    if not found or found.group(2) not in GROUPS:
        return None
    path, group, folder = found.groups()
    chosen = [o.split("=", 1)[1] for o in overrides if o.lstrip("+").startswith(f"{path}=")]
    example = f"{group}={folder}/{chosen[0] if chosen else '…'}"
    message = f"'{path}' is a folder of {group} options, not a group: write {example}"
    return ConfigError(group, message)


def _non_sweep(overrides: list[str]) -> list[str]:
    return [
        o.input_line
        for o in parse_overrides(overrides)
        if not o.is_sweep_override() and o.input_line
    ]


def load(overrides: list[str]) -> RunConfig:
    """The validated config of one job (no sweep) of ``overrides``; raise :class:`ConfigError`."""
    refuse_deletions(parse_overrides(overrides))
    register_options(overrides)
    with initialize_config_module(CONFIG_MODULE, version_base="1.3"):
        try:
            cfg = compose(CONFIG_NAME, overrides=overrides)
        except (HydraException, OmegaConfBaseException, ValueError) as err:
            raise _unknown_key(overrides, err, _composed) or ConfigError(
                "overrides", one_line(err)
            ) from None
    return validate(cfg)


def sets_a_value(override: Override) -> bool:
    """Whether ``override`` only sets a value of the composed config (``agent.tau=50``,
    ``++env.sigma=1``): what Hydra applies after composing the defaults."""
    key = override.get_key_element()
    plain = not (override.is_add() or override.is_delete() or override.package is not None)
    return plain and "." in key and "/" not in key and not key.startswith("hydra")


def values_apart(parsed: list[Override]) -> bool:
    """Whether the value overrides of ``parsed`` (:func:`sets_a_value`) may be set after
    composing the others, as :class:`Compositions` sets them: when every other override
    is Hydra's own, chooses a config group (a name for ``agent``, ``env/…``), or sets a
    top-level value that no value override reaches into (``name=mine``). A section replaced
    (``run={n_seeds: 3}``), deleted (``~run``) or a key added (``+agent.x=1``) makes Hydra's
    order of the overrides matter: such a job is composed whole."""
    reached = {o.get_key_element().split(".")[0] for o in parsed if sets_a_value(o)}
    for override in parsed:
        if sets_a_value(override) or override.is_hydra_override():
            continue
        key, value = override.get_key_element(), override.value()
        plain = not (override.is_add() or override.is_delete() or override.package is not None)
        chooses = (key in GROUPS or "/" in key) and isinstance(value, str)
        leaf = "." not in key and key not in reached and not isinstance(value, dict | list)
        if not (plain and (chooses or leaf)):
            return False
    return True


class Compositions:
    """The configs of a sweep's jobs, each as ``whole(job)`` composes it. Hydra composes the
    defaults (the groups chosen) and then sets the overrides' values in order; jobs that
    choose the same groups and differ in values (:func:`values_apart`) share one
    composition, copied and given their values (``OmegaConf.update``, as Hydra does),
    instead of one composition per job (0.05–0.2 s each)."""

    def __init__(self, whole: Callable[[list[str]], DictConfig]) -> None:
        self._whole = whole
        self._composed: dict[tuple[str, ...], DictConfig] = {}

    def __call__(self, point: list[str]) -> DictConfig:
        parsed = parse_overrides(point)
        if not values_apart(parsed):
            return self._whole(point)
        choices = tuple(o.input_line or "" for o in parsed if not sets_a_value(o))
        if choices not in self._composed:
            self._composed[choices] = self._whole(list(choices))
        config = copy.deepcopy(self._composed[choices])
        for override in filter(sets_a_value, parsed):
            OmegaConf.update(config, override.key_or_group, override.value(), merge=True,
                             force_add=override.is_force_add())  # fmt: skip
        return config


def check_job(
    composed: Callable[[list[str]], DictConfig], point: list[str], points: list[list[str]]
) -> None:
    """Validate the config ``composed(point)`` of one job (``point`` of ``points``) and check
    that a batch of its seeds fits in memory; raise :class:`ConfigError` naming the job.

    A plugin's code runs here (its ``Params``, its memory declaration), and may end the
    process: a job of a plugin is checked in a child process first (:func:`run_apart`)."""
    try:
        config = composed(point)
        if _of_plugin(config):
            run_apart(lambda: _check_values(config), "the check of its values", PLUGIN_SECONDS)
        _check_values(config)
    except ConfigError as err:
        raise _at_point(err, point, points) from None
    except Ended as err:
        raise _at_point(ConfigError("agent", str(err)), point, points) from None
    except (HydraException, OmegaConfBaseException, ValueError) as err:
        refused = _unknown_key(point, err, composed) or _group_path(point, err) or _jax_only(err)
        refused = refused or ConfigError("overrides", one_line(err))
        raise _at_point(refused, point, points) from None


def _check_values(composed: DictConfig) -> None:
    """:func:`validate` a job's config and check that a batch of its seeds fits in memory."""
    config = validate(composed)
    batch = min(config.run.batch_size, config.run.n_seeds)
    reason = memory.too_many_seeds(config.run.n_seeds) or memory.too_large(
        config.env, config.agent, batch, config.engine, config.run.every
    )
    if reason:
        raise ConfigError("memory", reason)


def _of_plugin(config: DictConfig) -> bool:
    """Whether the environment or agent of ``config`` comes from a plugin (not nslb)."""
    sections = [(ENVIRONMENTS, config.get("env")), (AGENTS, config.get("agent"))]
    names = [(r, n.get("name")) for r, n in sections if isinstance(n, DictConfig)]
    return any(name in r and r.foreign(str(name)) for r, name in names)


def _composed(overrides: list[str]) -> DictConfig:
    """The config of the job of ``overrides``, composed whole by Hydra's compose API."""
    return compose(CONFIG_NAME, overrides=overrides)


def check_command_line(overrides: list[str], multirun: bool) -> CommandLine:
    """Compose and validate every job of ``nslb run [-m] overrides``, and check that each
    batch fits in memory and that the output folder can be written.

    Raises :class:`ConfigError` naming the first bad point.
    """
    parsed = parse_overrides(overrides)
    refuse_deletions(parsed)
    register_options(overrides)
    with initialize_config_module(CONFIG_MODULE, version_base="1.3"):
        try:
            points, base = _sweep_points(overrides, multirun)
        except ConfigError:
            raise
        except (HydraException, OmegaConfBaseException, ValueError) as err:
            hint = _swept_group_hint(overrides)
            first = lambda added: _composed(_sweep_points(added, multirun)[0][0])  # noqa: E731
            known = (
                _unknown_key(overrides, err, first) or _group_path(overrides, err) or _jax_only(err)
            )
            raise (hint == "" and known) or ConfigError("overrides", one_line(err) + hint) from None
        sweep = multirun or base.hydra.mode == RunMode.MULTIRUN
        refuse_swept_section_keys(parsed, base)
        if sweep:
            refuse_swept_hydra_settings(parsed)
        else:
            refuse_several_values(parsed)
        composed = Compositions(_composed)
        if not sweep:  # a single run's config is the base, unless it holds a list (refused)
            whole = _non_sweep(points[0]) == points[0]
            check_job((lambda _: base) if whole else composed, points[0], points)
        elif base.hydra.sweeper.get("_target_") != NslbSweeperConf._target_:
            for point in points:  # nslb's sweeper checks its jobs itself, composing each once
                check_job(composed, point, points)
        key = "hydra.sweep.dir" if sweep else "hydra.run.dir"
        HydraConfig.instance().set_config(base)  # the folder names the chosen env option
        folder = str(base.hydra.sweep.dir if sweep else base.hydra.run.dir)
    _check_output(folder, key)
    if sweep and study.is_study(base.hydra.sweeper):
        planned = study.plan(base, overrides)
        return CommandLine(planned.trials, Path(folder), sweep, planned)
    seeds = (int(base.run.seed), int(base.run.seed) + int(base.run.n_seeds) - 1)
    return CommandLine(len(points), Path(folder), sweep, seeds=seeds)


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


def _at_point(err: ConfigError, point: list[str], points: list[list[str]]) -> ConfigError:
    if len(points) == 1:
        return err
    return ConfigError(err.key, f"{err.message} (in sweep job {' '.join(point)})")
