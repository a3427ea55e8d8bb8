"""Groups, agent labels, swept settings and agent selectors, from the run configs (one row
per run); docs/guide/plotting.md, *Runs and groups*, says what each is.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from pathlib import PurePosixPath
from typing import Any

import pandas as pd
import yaml
from natsort import natsort_keygen
from omegaconf.errors import OmegaConfBaseException

from nslb_cli.agents import AGENTS, Agent
from nslb_cli.common.registry import PluginError, params_defaults
from nslb_cli.envs import later_defaults
from nslb_cli.plot.identity import DATA, DATA_SOURCE, dataset
from nslb_cli.store.results import flatten

AGENT = "agent.name"
NAME = "name"
FOLDER = "folder"
GROUP = "group"
ENGINE = "run.engine"  # where not numpy: another engine's worlds, so a group of its own
LABEL = "agent"  # an agent's label in a labelled runs table (config columns are ``agent.…``)
AGENT_PREFIX = "agent."
SELECTOR = re.compile(r"^\s*(?P<name>[^()]*?)\s*\((?P<settings>[^()]*)\)\s*$")
natural = natsort_keygen()


class SelectionError(ValueError):
    """A selector that names no agent, or several, in a group; the message is one line."""


def config_value(value: Any) -> Any:
    """A config value as a runs table holds it: lists and mappings as their YAML text."""
    if isinstance(value, list | dict):  # on one line however long: titles never break
        return yaml.safe_dump(value, default_flow_style=True, width=math.inf).strip()
    return value


def agent_class(agent: str) -> type[Agent] | None:
    """The class of agent ``agent``; ``None`` where no installed package declares a usable one."""
    try:
        return AGENTS.get(agent)
    except PluginError:
        return None


def legend_key(agent: str) -> tuple[float, Any]:
    """Where agent ``agent`` comes in legends: by ``legend_rank``, then (unranked) by name."""
    cls = agent_class(agent)
    rank = None if cls is None else cls.legend_rank
    return (math.inf if rank is None else rank, natural(agent))


@cache
def agent_defaults(agent: str) -> dict[str, Any] | None:
    """The flattened ``Params`` defaults of agent ``agent`` (``{"agent.tau": 100, …}``);
    ``None`` for an agent whose class cannot be had."""
    cls = agent_class(agent)
    if cls is None:
        return None
    try:
        tree = params_defaults(cls.Params)  # as its option, and so config.yaml, holds them
    except OmegaConfBaseException:  # a plugin's Params that no config can hold
        return None
    return {key: config_value(value) for key, value in flatten({"agent": tree}).items()}


def with_later_defaults(runs: pd.DataFrame) -> pd.DataFrame:
    """``runs`` with the parameters added later (``envs.later_defaults``) that some runs record
    filled in at their default in the runs that do not: a learned model's 10,000 logged
    rounds, the default, are then a value beside the 100 of another run, not a blank."""
    if "env.name" not in runs:
        return runs
    filled = runs.copy()
    for env, of_env in runs.groupby(runs["env.name"].map(str), sort=False):
        for key, default in later_defaults(str(env)).items():
            column = f"env.{key}"
            if column in runs and runs[column].notna().any():
                unrecorded = of_env.index[of_env[column].map(absent)]
                filled.loc[unrecorded, column] = default
    return filled


def non_default(row: pd.Series, columns: Iterable[str]) -> list[str]:
    """The agent settings among ``columns`` that ``row`` (a run) recorded at a value other than
    the agent's default (every recorded one where defaults are unknown)."""
    defaults = agent_defaults(str(row[AGENT])) or {}
    return [
        column
        for column in columns
        if column.startswith(AGENT_PREFIX) and column != AGENT and not absent(row[column])
        if column not in defaults or not same_value(row[column], defaults[column])
    ]


def same_value(a: Any, b: Any) -> bool:
    """Config values compared as values: ``100 == 100.0``, ``None`` equals a missing value."""
    if missing(a) or missing(b):
        return missing(a) and missing(b)
    if is_number(a) and is_number(b):
        return float(a) == float(b)
    return str(a) == str(b)


def display_name(agent: str, rename: Mapping[str, str] | None = None) -> str:
    """The label of an agent name: ``rename`` (by agent name or display name) or the default."""
    rename = rename or {}
    cls = agent_class(agent)
    shown = cls.display_name if cls is not None and cls.display_name else agent
    return rename.get(agent, rename.get(shown, shown))


def group_keys(columns: Iterable[str]) -> list[str]:
    """The config columns that define a group: ``name``, the environment settings, the data's
    identity and the engine."""
    columns = list(columns)
    return [
        NAME,
        *(c for c in columns if c.startswith("env.") and c not in DATA_SOURCE),
        *([DATA] if DATA in columns else []),
        *([ENGINE] if ENGINE in columns else []),
    ]


def setting_columns(columns: Iterable[str]) -> list[str]:
    """Config columns that describe a run (not its name, agent name, folder or data source)."""
    return [
        c for c in columns if c not in (NAME, AGENT, FOLDER, GROUP, LABEL) and c not in DATA_SOURCE
    ]


def agent_settings(columns: Iterable[str]) -> list[str]:
    """Settings that can tell runs of one group apart: those that do not define groups."""
    columns = list(columns)
    keys = set(group_keys(columns))
    return [c for c in setting_columns(columns) if c not in keys]


def short_key(column: str) -> str:
    """``agent.num_particles`` -> ``num_particles``; ``env.name`` -> ``env``."""
    if column == "env.name":
        return "env"
    return column.split(".", 1)[1] if column.startswith(("env.", "agent.")) else column


def format_value(value: Any) -> str:
    """Config values as people write them: ``100`` rather than ``100.0``."""
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else f"{value:g}"
    return str(value)


def sort_key(value: Any) -> tuple:
    """Numbers before text, numbers by value, text in natural order, missing values last."""
    if missing(value):
        return (2, 0.0, ())
    if is_number(value):
        return (0, float(value), ())
    return (1, 0.0, natural(str(value)))


def order_runs(runs: pd.DataFrame, agents: Sequence[str] | None = None) -> pd.DataFrame:
    """Runs in legend order: by agent (``agents``, else ``legend_key``), then settings."""
    settings = setting_columns(runs.columns)
    order = {name: i for i, name in enumerate(agents or ())}

    def key(index: Any) -> tuple:
        row = runs.loc[index]
        agent = str(row[AGENT])
        return (
            *((order.get(agent, len(order)), natural(agent)) if order else legend_key(agent)),
            *(sort_key(row[column]) for column in settings),
            natural(str(row.get(FOLDER, ""))),
        )

    return runs.loc[sorted(runs.index, key=key)]


def agent_order(runs: pd.DataFrame, agents: Sequence[str]) -> list[str] | None:
    """The runs' agent names in the order ``agents`` lists them; ``None`` when it is empty."""
    if not agents:
        return None
    names = list(dict.fromkeys(runs[AGENT].map(str)))
    return sorted(
        names,
        key=lambda n: min(
            (i for i, a in enumerate(agents) if a in (n, display_name(n))), default=len(agents)
        ),
    )


def environment(run: pd.Series) -> str:
    """A run's environment in one line: ``synthetic (dynamics=fixed, …)``, the data first."""
    keys = [key for key in group_keys(run.index) if key not in (NAME, "env.name")]
    keys = sorted(keys, key=lambda key: key != DATA)
    keys = [key for key in keys if key == DATA or not missing(run.get(key))]
    return _with_settings(format_value(run.get("env.name", "?")), run, keys, short=False)


def group_titles(runs: pd.DataFrame) -> pd.Series:
    """Each run's group title: its name plus the environment settings that set it apart (from
    the group's first run), a long value in short form (``short_values``); a clash of titles
    gets ``#2``, …."""
    keys = group_keys(runs.columns)
    titles = pd.Series("", index=runs.index, dtype=object)
    for name, same_name in runs.groupby(runs[NAME].map(format_value), sort=False):
        differing = varying_columns(same_name, keys[1:])
        ids = [tuple(hashable(row[key]) for key in keys) for _, row in same_name.iterrows()]
        firsts: dict[tuple, Any] = {}
        for index, group in zip(same_name.index, ids, strict=True):
            firsts.setdefault(group, index)
        table, columns = short_values(same_name, differing, list(firsts.values()))
        shown: dict[str, int] = {}  # title -> groups shown under it so far
        given: dict[tuple, str] = {}
        for group, index in firsts.items():
            title = _with_settings(str(name), table.loc[index], columns)
            shown[title] = shown.get(title, 0) + 1
            given[group] = title if shown[title] == 1 else f"{title} #{shown[title]}"
        titles[same_name.index] = [given[group] for group in ids]
    return titles


LONG_VALUE = 24
"""Characters of a setting's value beyond which a title names it by its preset or a hash."""
HASH_DIGITS = 8
PRESET = "env preset"  # a column of short_values' table: shown bare in a title


def short_values(
    runs: pd.DataFrame, columns: Sequence[str], firsts: Sequence[Any]
) -> tuple[pd.DataFrame, list[str]]:
    """``runs`` and the ``columns`` a title shows, those with a value longer than
    ``LONG_VALUE`` characters (a list of AR coefficients; the data is named short anyway)
    in short form: where the groups'
    first runs (``firsts``) each have a distinct env preset (``preset``: ``paper_k5``), it is
    shown, first, in their place; else each long value is the first ``HASH_DIGITS`` hex
    digits of its SHA-256."""
    long = [c for c in columns if c != DATA and runs[c].map(_long).any()]  # the data: short
    if not long:
        return runs, list(columns)
    presets = [preset(runs.loc[index]) for index in firsts]
    if all(presets) and len(set(presets)) == len(presets):
        shown = pd.Series(None, index=runs.index, dtype=object)
        shown[list(firsts)] = presets
        kept = [column for column in columns if column not in long]
        return runs.assign(**{PRESET: shown}), [PRESET, *kept]
    hashed = {column: runs[column].map(lambda v: _digest(v) if _long(v) else v) for column in long}
    return runs.assign(**hashed), list(columns)


def _long(value: Any) -> bool:
    return not absent(value) and len(_shown_value(value)) > LONG_VALUE


def _digest(value: Any) -> str:
    return hashlib.sha256(_shown_value(value).encode()).hexdigest()[:HASH_DIGITS]


def preset(run: pd.Series) -> str | None:
    """The env preset a run folder names (``paper_k5`` of
    ``latent_ar/paper_k5/larl/env.horizon=100``: the part before the agent's folder, as
    ``nslb run`` lays them out), or ``None`` where its folder does not show one."""
    folder = run.get(FOLDER)
    if not isinstance(folder, str) or not folder:
        return None
    parts = PurePosixPath(folder.split("; ")[0]).parts
    agent = str(run.get(AGENT))
    at = [i for i in range(max(0, len(parts) - 2), len(parts)) if parts[i] == agent]
    return parts[at[0] - 1] if at and at[0] > 0 else None


def agent_labels(
    runs: pd.DataFrame,
    within: Sequence[str],
    rename: Mapping[str, str] | None = None,
    exclude: Iterable[str] = (),
) -> pd.Series:
    """Each run's label among the runs sharing the ``within`` columns: the display name and
    every setting (but ``exclude``) off the defaults or differing between the agent's runs."""
    excluded = {*within, *exclude}
    settings = [column for column in setting_columns(runs.columns) if column not in excluded]
    labels = pd.Series("", index=runs.index, dtype=object)
    by = [runs[column].map(format_value) for column in (*within, AGENT)]
    for _, same_agent in runs.groupby(by, sort=False):
        differing = set(varying_columns(same_agent, settings))
        for index, row in same_agent.iterrows():
            named = differing | set(non_default(row, settings))
            shown = [column for column in settings if column in named]
            labels[index] = _with_settings(display_name(str(row[AGENT]), rename), row, shown)
    return _unique(labels, runs, [*within, *exclude])


def swept_settings(runs: pd.DataFrame) -> dict[str, list[str]]:
    """Per group: the agent settings some agent of the group ran at two or more values."""
    settings = agent_settings(runs.columns)
    swept: dict[str, list[str]] = {}
    for group, in_group in runs.groupby(GROUP, sort=False):
        found = {
            column
            for _, same_agent in in_group.groupby(in_group[AGENT].map(str), sort=False)
            for column in varying_columns(same_agent, settings)
        }
        swept[str(group)] = [column for column in settings if column in found]
    return swept


def ordered_families(runs: pd.DataFrame) -> list[list[str]]:
    """Labels of one agent that differ in a numeric setting, each family in that setting's order
    (the numeric setting with the most values orders it; other differing settings split it)."""
    rows = runs.drop_duplicates(LABEL)
    settings = [c for c in agent_settings(rows.columns) if c.startswith(AGENT_PREFIX)]
    families = []
    for _, same in rows.groupby(rows[AGENT].map(str), sort=False):
        if len(same) < 2:
            continue
        varying = varying_columns(same, settings)
        numeric = [
            column
            for column in varying
            if all(is_number(v) for v in same[column] if not missing(v))
            and same[column].map(lambda v: None if missing(v) else float(v)).nunique() > 1
        ]
        if not numeric:
            continue
        axis = max(numeric, key=lambda column: (same[column].nunique(), -numeric.index(column)))
        others = [column for column in varying if column != axis]
        keys = [
            same[column].map(lambda v: "" if missing(v) else format_value(v)) for column in others
        ]
        parts = same.groupby(keys, sort=False) if keys else [(None, same)]
        for _, family in parts:
            if len(family) > 1:
                ordered = sorted(family.index, key=lambda i: sort_key(family.at[i, axis]))
                families.append([str(family.at[i, LABEL]) for i in ordered])
    return families


def parse_selector(text: str) -> tuple[str, dict[str, str]]:
    """``umts(num_particles=100)`` -> ``("umts", {"num_particles": "100"})``; no parentheses:
    a name alone."""
    match = SELECTOR.match(text)
    if not match:
        return text.strip(), {}
    settings = {}
    for item in filter(None, (part.strip() for part in match["settings"].split(","))):
        key, sep, value = item.partition("=")
        if not (sep and key.strip()):
            raise SelectionError(f"expected key=value in '{text}', got '{item}'")
        settings[key.strip()] = value.strip().strip("'\"")
    return match["name"], settings


def select(runs: pd.DataFrame, selector: str, rename: Mapping[str, str] | None = None) -> list[str]:
    """The labels among ``runs`` (one group's, labelled) that ``selector`` names: a label, or a
    name (agent, display or renamed) with optional settings, ``umts(num_particles=100)``."""
    labels = runs[LABEL].map(str)
    if (labels == selector.strip()).any():
        return [selector.strip()]
    name, settings = parse_selector(selector)
    agents = runs[AGENT].map(str)
    named = (
        (agents.str.casefold() == name.casefold())
        | (agents.map(display_name) == name)
        | (agents.map(lambda agent: display_name(agent, rename)) == name)
    )
    for key, value in settings.items():
        column = key if key in runs.columns else f"{AGENT_PREFIX}{key}"
        if column not in runs.columns:
            return []
        named &= runs[column].map(lambda recorded, value=value: _matches(recorded, value))
    return list(dict.fromkeys(labels[named]))


def references(
    runs: pd.DataFrame,
    selector: str | Sequence[str] | None,
    rename: Mapping[str, str] | None = None,
    required: bool = True,
) -> tuple[dict[str, str | None], dict[str, str]]:
    """Each group's reference label as ``selector`` names it (a sequence: its first selector
    that names an agent of the group), and the groups where one named several, with it;
    ``required``: naming none or several raises ``SelectionError``."""
    found: dict[str, str | None] = {}
    ambiguous: dict[str, str] = {}
    candidates = [selector] if isinstance(selector, str) else list(selector or [])
    for group, in_group in runs.groupby(runs[GROUP].map(str), sort=False):
        named = ((c, select(in_group, c, rename)) for c in candidates)
        candidate, matches = next(((c, m) for c, m in named if m), ("", []))
        found[str(group)] = matches[0] if len(matches) == 1 else None
        if len(matches) > 1:
            ambiguous[str(group)] = candidate
        if not required or not selector or len(matches) == 1:
            continue
        if not matches:
            present = ", ".join(dict.fromkeys(in_group[LABEL].map(str)))
            raise SelectionError(
                f"'{selector}' names no agent in group '{group}' (there: {present})"
            )
        shown = sorted(matches, key=natural)
        raise SelectionError(
            f"'{selector}' names {len(matches)} agents in group '{group}' "
            f"({', '.join(shown)}); name one, e.g. '{_example(in_group, shown)}'"
        )
    return found, ambiguous


def _example(runs: pd.DataFrame, labels: Sequence[str]) -> str:
    """A selector naming the first of ``labels``: ``umts(num_particles=10)``."""
    matched = runs[runs[LABEL].map(str).isin(labels)]
    first = matched[matched[LABEL].map(str) == labels[0]].iloc[0]
    columns = [c for c in setting_columns(matched.columns) if c.startswith(AGENT_PREFIX)]
    differing = varying_columns(matched, columns) or varying_columns(
        matched, setting_columns(matched.columns)
    )
    settings = ", ".join(
        f"{short_key(c)}={_shown_value(first[c])}" for c in differing if not absent(first[c])
    )
    return f"{first[AGENT]}({settings})" if settings else str(first[LABEL])


def _matches(recorded: Any, text: str) -> bool:
    """Whether a recorded config value is the value written as ``text``."""
    if absent(recorded):
        return False
    if recorded is None:
        return text.lower() in ("null", "none", "")
    if is_number(recorded):
        try:
            return math.isclose(float(recorded), float(text), rel_tol=1e-9, abs_tol=0.0)
        except ValueError:
            return False
    return format_value(recorded) == text


def varying_columns(runs: pd.DataFrame, columns: Iterable[str]) -> list[str]:
    """Columns with two or more distinct values (missing counts as a value) among ``runs``."""
    return [
        column
        for column in columns
        if len({format_value(v) if not missing(v) else None for v in runs[column]}) > 1
    ]


def _with_settings(base: str, row: pd.Series, columns: Sequence[str], short: bool = True) -> str:
    """``base (key=value, …)`` for the recorded ``columns``; the data named short unless
    ``short=False``."""
    shown = [_setting(row, column, short) for column in columns if not absent(row[column])]
    return f"{base} ({', '.join(shown)})" if shown else base


def _setting(row: pd.Series, column: str, short: bool) -> str:
    """``key=value`` of one recorded setting; an env preset (``PRESET``) bare."""
    if column == PRESET:
        return str(row[column])
    value = dataset(row, short) if column == DATA else _shown_value(row[column])
    return f"{short_key(column)}={value}"


def _shown_value(value: Any) -> str:
    return "null" if value is None else format_value(value)


def _unique(labels: pd.Series, runs: pd.DataFrame, context: Sequence[str]) -> pd.Series:
    """Equal labels of distinct runs sharing the ``context`` columns get their folder appended."""
    context = [runs[column].map(format_value) for column in context]
    clashes = labels.groupby([*context, labels], sort=False).transform("size") > 1
    if clashes.any() and FOLDER in runs:
        labels = labels.where(~clashes, labels + " [" + runs[FOLDER].map(str) + "]")
    return labels


def hashable(value: Any) -> Any:
    """``None`` for a missing value (``missing``), else the value."""
    return None if missing(value) else value


def missing(value: Any) -> bool:
    """``None`` (a recorded null) or NaN (not recorded)."""
    return value is None or absent(value)


def absent(value: Any) -> bool:
    """NaN: a setting a run did not record (a recorded null is ``None``)."""
    return isinstance(value, float) and value != value


def is_number(value: Any) -> bool:
    """An int or float, not a bool."""
    return isinstance(value, int | float) and not isinstance(value, bool)
