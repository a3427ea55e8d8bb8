"""A command line's overrides: parsed with Hydra's parser, and nslb's own checks of them.

nslb checks what Hydra's advice would get wrong (``agent.taux=3``: "use +agent.taux=3");
any other problem is Hydra's message, on one line (``one_line``).
"""

from __future__ import annotations

import re
from collections.abc import Collection
from pathlib import Path

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Override
from hydra.errors import HydraException, MissingConfigException
from omegaconf import DictConfig
from omegaconf.errors import OmegaConfBaseException

from nslb_cli.agents import AGENTS
from nslb_cli.common.errors import ConfigError
from nslb_cli.jax_engine import agents as jax_agents
from nslb_cli.runner.config import SECTIONS, schema_of, unknown_key, unknown_section

GROUPS = ("env", "agent", "experiment", "hparams_search", "study")
"""nslb's config groups, of which a run chooses one option each."""
HOME = re.compile(r"^([^=~][^=]*)=~(?=/|$)")
COMPOSING = (HydraException, OmegaConfBaseException, ValueError)
"""What Hydra's composition raises for a bad override (``one_line`` tells it)."""


def expand_home(overrides: list[str]) -> list[str]:
    """``key=~/path`` -> ``key=/home/me/path``: the shell does not expand ``~`` after ``=``,
    and Hydra's grammar rejects it."""
    return [HOME.sub(lambda m: f"{m.group(1)}={Path.home()}", item) for item in overrides]


def one_line(err: BaseException) -> str:
    """Hydra's (or OmegaConf's) message of ``err`` on one line: a missing option with the
    options there are, else its lines joined and the reason it was raised from."""
    if isinstance(err, MissingConfigException) and err.missing_cfg_file:
        there = f" (available: {', '.join(err.options)})" if err.options else ""
        return f"Could not find '{err.missing_cfg_file}'{there}"
    cause = err.__cause__
    known = cause.msg if isinstance(cause, OmegaConfBaseException) else None
    reason = f": {str(known).splitlines()[0]}" if known else ""  # not its debugging lines
    return " ".join(f"{err}{reason}".split())


def parse_overrides(overrides: list[str]) -> list[Override]:
    """The parsed overrides; an unparsable one is a ``ConfigError`` naming it."""
    parser = OverridesParser.create()
    parsed = []
    for item in overrides:
        try:
            parsed += parser.parse_overrides([item])
        except COMPOSING as err:
            raise ConfigError(
                "overrides",
                f"cannot parse '{item}' ({one_line(err)}); write key=value, and quote a value "
                "with special characters: 'key=\"value\"'",
            ) from None
    for override in parsed:
        if not override.key_or_group:
            raise ConfigError("overrides", f"'{override.input_line}' has no key: write key=value")
    return parsed


def refuse_group_mistakes(parsed: list[Override]) -> None:
    """Refuse, in nslb's words, several options for one run (``agent=[mts,umts]``), a folder of
    options given as a group, and an agent a package declares for the JAX engine only."""
    for override in parsed:
        key, value, line = override.get_key_element(), override.value(), override.input_line or ""
        if key in GROUPS and isinstance(value, list):
            raise ConfigError(
                key,
                f"'{line}' chooses several; a run has one {key}: to run each, sweep with "
                f"-m {key}={','.join(map(str, value))}",
            )
        group, _, folder = key.partition("/")
        if folder and group in GROUPS and not override.is_add():
            example = f"{group}={folder}/{line.partition('=')[2] or '…'}"
            raise ConfigError(
                group, f"'{key}' is a folder of {group} options, not a group: write {example}"
            )
        if key == "agent" and isinstance(value, str):
            _refuse_jax_only(value)
        elif key == "agent" and override.is_discrete_sweep():
            for name in override.sweep_string_iterator():
                _refuse_jax_only(name)


def _refuse_jax_only(name: str) -> None:
    """Refuse agent ``name`` if a package declares only its JAX class."""
    if name not in AGENTS.declared() and name in jax_agents.JAX_AGENTS.declared():
        raise ConfigError(
            "agent",
            f"'{name}' is declared as a JAX agent only (entry-point group "
            f"{jax_agents.GROUP}); an agent needs its numpy class too, declared under "
            "nslb.agents (nslb_cli.api)",
        )


def refuse_deletions(parsed: list[Override]) -> None:
    """Refuse ``~env.horizon`` and the like: a run records every value it used."""
    for override in parsed:
        if override.is_delete() and not override.key_or_group.startswith("hydra"):
            raise ConfigError(
                override.key_or_group,
                f"'{override.input_line}' deletes a setting, and every run records the "
                f"value it used: give it a value ({override.key_or_group}=…) or leave it out "
                "for its default",
            )


def chooses(override: Override, groups: Collection[str]) -> bool:
    """Whether ``override`` chooses a config group's option (``agent=umts``,
    ``hydra/launcher=joblib``); ``groups``: the top-level ones."""
    key = override.key_or_group
    return key in groups or "/" in key


def refuse_unknown_keys(
    parsed: list[Override], defaults: DictConfig, groups: Collection[str], swept: Collection[str]
) -> None:
    """Refuse a value override that ``defaults`` has no key for, before Hydra advises to add it:
    ``engine=jax``, ``agent.taux=3``, ``agent.gamma=0.1`` beside a sweep over ``agent``.
    ``groups``: the top-level config groups; ``swept``: the keys the sweep gives several values."""
    for override in parsed:
        added = override.is_add() or override.is_force_add()
        if added or override.is_hydra_override() or chooses(override, groups):
            continue
        key, line = override.key_or_group, override.input_line or ""
        head, _, rest = key.partition(".")
        if head not in defaults:
            owner = _owning_section(defaults, key)
            if owner is None or rest:
                raise unknown_section(head)
            raise ConfigError(key, f"'{line}' is not a top-level key: write {owner}.{line}")
        node, name = defaults[head], rest.partition(".")[0]
        if not rest or head not in SECTIONS or not isinstance(node, DictConfig) or name in node:
            continue
        if head in swept:
            raise ConfigError(
                key,
                f"the sweep over {head} sets {key} in the default {head} ({node.get('name')}) "
                f"first: write ++{line} to set it in each swept {head}",
            )
        raise unknown_key(schema_of(node, head), head, name, node.get("name"))


def _owning_section(config: DictConfig, key: str) -> str | None:
    """The first section of ``config`` (``SECTIONS``) that has the key ``key``."""
    return next(
        (s for s in SECTIONS if isinstance(config.get(s), DictConfig) and key in config[s]), None
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
