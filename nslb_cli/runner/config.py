"""The validated config of one job: ``RunConfig``, built by ``validate``.

The bottom of the runner: it knows the registries and the schemas, not Hydra's composition.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import ConfigKeyError, OmegaConfBaseException

from nslb_cli.agents import AGENTS
from nslb_cli.common import validators as check
from nslb_cli.common.errors import ConfigError, describe_error
from nslb_cli.common.registry import PluginError, Registry
from nslb_cli.common.stopping import stopped_by
from nslb_cli.envs import ENVIRONMENTS
from nslb_cli.runner.engines import ENGINES, Engine
from nslb_cli.store.results import FORMATS

NAME = re.compile(r"^[\w.-]+(/[\w.-]+)*$")
SECTIONS = ("name", "env", "agent", "run")
MAX_SEED = 2**63 - 1
DIRECTIONS = {"cum_regret": "minimize", "cum_reward": "maximize"}
"""What a job can return to a sweeper (``run.objective``), and whether lower is better."""


@dataclass
class RunSettings(check.Section):
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

    def validate(self) -> None:
        check.non_negative(self.seed, "seed")
        check.one_of(self.engine, tuple(ENGINES), "engine")
        check.one_of(self.objective, DIRECTIONS, "objective")
        check.one_of(self.format, FORMATS, "format")
        check.positive(self.every, "every")
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
    notes: tuple[str, ...] = ()  # what the job's line says of settings nslb adjusted

    @property
    def seeds(self) -> np.ndarray:
        return self.run.seed + np.arange(self.run.n_seeds, dtype=np.int64)  # stop may be 2^63

    @property
    def engine(self) -> Engine:
        """The engine of ``run.engine`` (``nslb_cli.runner.engines``)."""
        return ENGINES[self.run.engine]


def unknown_key(schema: type, section: str, key: str, entry: Any = None) -> ConfigError:
    """The refusal of ``section.key``, a key that ``schema`` (of the entry named ``entry``)
    lacks: the valid keys, and the closest one."""
    names = [f.name for f in fields(schema)]
    close = difflib.get_close_matches(key, names, n=1)
    guess = f" (did you mean {section}.{close[0]}?)" if close else ""
    named = f" '{entry}'" if entry else ""
    return ConfigError(
        f"{section}.{key}",
        f"unknown key for {section}{named}{guess}; valid keys: " + ", ".join(names),
    )


def unknown_section(key: str) -> ConfigError:
    """The refusal of a top-level key that is none of ``SECTIONS``."""
    return ConfigError(key, f"unknown top-level key; valid: {', '.join(SECTIONS)}")


def _parameters(schema: type, node: Any, section: str) -> Any:
    """``node`` as an instance of ``schema``; every problem becomes a ``ConfigError``."""
    if not isinstance(node, DictConfig):
        raise ConfigError(section, f"must be a mapping, got {node!r}")
    try:
        params = OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(schema), node))
        if not isinstance(params, check.Section):  # a plugin's: the rule every section obeys
            check.section(params)
        return params
    except ConfigKeyError as err:
        raise unknown_key(schema, section, str(err.key), node.get("name")) from None
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
        refuses = f"{node.get('name')} refuses these values: {describe_error(err)}"
        raise ConfigError(section, refuses) from None


def schema_of(node: Any, section: str) -> type:
    """The parameter dataclass of section ``section`` (``env``, ``agent`` or ``run``) whose
    composed config is ``node``; ``ConfigError`` for an entry that is not registered."""
    if section == "run":
        return RunSettings
    registry = ENVIRONMENTS if section == "env" else AGENTS
    return _registered(node, section, registry).Params


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


def pairing_refusal(
    env: Any, agent: Any, env_name: str, agent_name: str, env_params: Any = None
) -> ConfigError | None:
    """Why agent class ``agent`` cannot play environment class ``env`` (with ``env_params``,
    where given); ``None`` if it can."""
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
    told = env_params is None or getattr(env, "true_model", lambda _: False)(env_params)
    if getattr(agent, "needs_true_model", False) and not told:
        return ConfigError(
            "agent",
            f"{agent_name} needs the true model, which env={env_name} does not tell its agents "
            "with these settings: use env=switching_latent (env.model=known), "
            "env=movielens_genres, or env=synthetic with env.model=known env.dynamics=markov",
        )
    return None


def validate(cfg: DictConfig) -> RunConfig:
    """Check a composed config and build its ``RunConfig``; raise ``ConfigError``."""
    unknown = sorted(set(map(str, cfg.keys())) - set(SECTIONS) - {"hydra"})
    if unknown:
        raise unknown_section(unknown[0])
    name = str(cfg.get("name"))
    if not NAME.match(name) or ".." in name.split("/"):
        raise ConfigError(
            "name",
            f"must be folder names of letters, digits, '_', '.', '-' joined by '/', "
            f"without '..'; got '{name}'",
        )
    env = _registered(cfg.get("env"), "env", ENVIRONMENTS)
    agent = _registered(cfg.get("agent"), "agent", AGENTS)
    config = RunConfig(
        name=name,
        env=_parameters(env.Params, cfg.env, "env"),
        agent=_parameters(agent.Params, cfg.agent, "agent"),
        run=_parameters(RunSettings, cfg.get("run"), "run"),
    )
    refusal = pairing_refusal(env, agent, str(cfg.env.name), str(cfg.agent.name), config.env)
    if refusal is not None:
        raise refusal
    config = window_within_the_run(config, agent)
    refused = config.engine.refusal(config.env, config.agent)
    if refused:
        raise ConfigError(*refused)
    return config


def window_within_the_run(config: RunConfig, agent: Any) -> RunConfig:
    """``config`` with a sliding window longer than the run cut to the run's horizon: the same
    window (it holds every round), without the time and memory of a longer one."""
    tau, horizon = getattr(config.agent, "tau", None), getattr(config.env, "horizon", None)
    if not getattr(agent, "slides", False) or tau is None or horizon is None or tau <= horizon:
        return config
    note = f"agent.tau={tau} is beyond env.horizon={horizon}: the window is the whole run, run "
    note += f"as agent.tau={horizon}"
    return replace(config, agent=replace(config.agent, tau=horizon), notes=(*config.notes, note))
