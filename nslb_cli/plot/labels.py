"""Groups, agent labels and swept settings, from the run configs (one row per run).

A *group* is what one set of figures and one summary table show: the runs with the same
``name`` (the experiment: ``paper/fixed``, ``default``, …) and the same environment, i.e.
the same ``env`` settings and the same data (:data:`~nslb_cli.plot.identity.DATA`), so every
agent in it faces the same worlds seed by seed. Its title is the name, plus the environment
settings that tell it apart from other groups of the same name, e.g.
``default (switch_prob=0.01)`` or ``paper/movielens (data=~/ml-100k [ratings 3f2a9c1e])``.

Within a group each run gets an agent *label*: the agent's display name (``mTS``,
``CD-UCB``, …), plus the settings that differ between that agent's runs in the group, e.g.
``umTS (num_particles=10)``. A setting some agent of a group ran at two or more values is
*swept* in that group; environment settings never are (they define the group).

Values order naturally: numbers by value, text with its numbers by value (``tau=20`` before
``tau=100``), missing values last.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pandas as pd
from natsort import natsort_keygen

from nslb_cli.plot.identity import DATA, DATA_SOURCE, dataset

# Display names, in legend order: the paper's baselines, the model-based agents, references.
DISPLAY_NAMES = {
    "cd_ucb": "CD-UCB",
    "cd_ts": "CD-TS",
    "cd_linucb": "CD-LinUCB",
    "cd_lints": "CD-LinTS",
    "exp3s": "Exp3.S",
    "exp4s": "Exp4.S",
    "sw_mucb": "SW-mUCB",
    "sw_umucb": "SW-umUCB",
    "mts": "mTS",
    "umts": "umTS",
    "oracle": "Oracle",
    "random": "Random",
}
AGENT = "agent.name"
NAME = "name"
FOLDER = "folder"
GROUP = "group"
LABEL = "agent"  # an agent's label in a labelled runs table (config columns are ``agent.…``)
natural = natsort_keygen()


def display_name(agent: str, rename: Mapping[str, str] | None = None) -> str:
    """The label of an agent name: ``rename`` (by agent name or display name) or the default."""
    rename = rename or {}
    shown = DISPLAY_NAMES.get(agent, agent)
    return rename.get(agent, rename.get(shown, shown))


def group_keys(columns: Iterable[str]) -> list[str]:
    """The config columns that define a group: ``name``, the environment settings and the
    data's identity (where the data were read from is not: see :mod:`identity`)."""
    columns = list(columns)
    return [
        NAME,
        *(c for c in columns if c.startswith("env.") and c not in DATA_SOURCE),
        *([DATA] if DATA in columns else []),
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
    if _missing(value):
        return (2, 0.0, ())
    if isinstance(value, int | float) and not isinstance(value, bool):
        return (0, float(value), ())
    return (1, 0.0, natural(str(value)))


def order_runs(runs: pd.DataFrame, agents: Sequence[str] | None = None) -> pd.DataFrame:
    """Runs in legend order: by agent (``agents``, else :data:`DISPLAY_NAMES`' order), then by
    their settings."""
    settings = setting_columns(runs.columns)
    order = {name: i for i, name in enumerate(agents or DISPLAY_NAMES)}

    def key(index: Any) -> tuple:
        row = runs.loc[index]
        agent = str(row[AGENT])
        return (
            order.get(agent, len(order)),
            natural(agent),
            *(sort_key(row[column]) for column in settings),
            natural(str(row.get(FOLDER, ""))),
        )

    return runs.loc[sorted(runs.index, key=key)]


def environment(run: pd.Series) -> str:
    """A run's environment in one line: ``synthetic (dynamics=fixed, …)``, the data first."""
    keys = [key for key in group_keys(run.index) if key not in (NAME, "env.name")]
    keys = sorted(keys, key=lambda key: key != DATA)
    return _with_settings(format_value(run.get("env.name", "?")), run, keys)


def group_titles(runs: pd.DataFrame) -> pd.Series:
    """Each run's group title: its name, plus the environment settings that set it apart.

    A group's title is made from its first run (runs of one group may have read the same
    data from different folders). Groups never share a title: a clash of shown values gets
    ``#2``, ….
    """
    keys = group_keys(runs.columns)
    titles = pd.Series("", index=runs.index, dtype=object)
    for name, same_name in runs.groupby(runs[NAME].map(format_value), sort=False):
        differing = _differing(same_name, keys[1:])
        ids = [tuple(_hashable(row[key]) for key in keys) for _, row in same_name.iterrows()]
        given: dict[tuple, str] = {}
        shown: dict[str, int] = {}  # title -> groups shown under it so far
        for index, group in zip(same_name.index, ids, strict=True):
            if group not in given:
                title = _with_settings(str(name), same_name.loc[index], differing)
                shown[title] = shown.get(title, 0) + 1
                given[group] = title if shown[title] == 1 else f"{title} #{shown[title]}"
            titles[index] = given[group]
    return titles


def agent_labels(
    runs: pd.DataFrame,
    within: Sequence[str],
    rename: Mapping[str, str] | None = None,
    exclude: Iterable[str] = (),
) -> pd.Series:
    """Each run's agent label among the runs that share the ``within`` columns.

    Settings in ``exclude`` (e.g. the parameter on a sweep figure's x axis) are left out.
    """
    excluded = {*within, *exclude}
    settings = [column for column in setting_columns(runs.columns) if column not in excluded]
    labels = pd.Series("", index=runs.index, dtype=object)
    by = [runs[column].map(format_value) for column in (*within, AGENT)]
    for _, same_agent in runs.groupby(by, sort=False):
        differing = _differing(same_agent, settings)
        for index, row in same_agent.iterrows():
            labels[index] = _with_settings(display_name(str(row[AGENT]), rename), row, differing)
    return _unique(labels, runs, [*within, *exclude])


def swept_settings(runs: pd.DataFrame) -> dict[str, list[str]]:
    """Per group (``runs`` has a ``group`` column): the agent settings some agent of the group
    was run with at two or more values, in column order."""
    settings = agent_settings(runs.columns)
    swept: dict[str, list[str]] = {}
    for group, in_group in runs.groupby(GROUP, sort=False):
        found = {
            column
            for _, same_agent in in_group.groupby(in_group[AGENT].map(str), sort=False)
            for column in _differing(same_agent, settings)
        }
        swept[str(group)] = [column for column in settings if column in found]
    return swept


def seed_ranges(seeds: Iterable[int]) -> str:
    """``[0, 1, 2, 5, 7, 8]`` -> ``0–2, 5, 7–8``."""
    ordered = sorted(seeds)
    parts, start = [], None
    for i, seed in enumerate(ordered):
        start = seed if start is None else start
        if i + 1 == len(ordered) or ordered[i + 1] != seed + 1:
            parts.append(str(seed) if seed == start else f"{start}–{seed}")
            start = None
    return ", ".join(parts)


def _differing(runs: pd.DataFrame, columns: Iterable[str]) -> list[str]:
    """Columns with two or more distinct values (missing counts as a value) among ``runs``."""
    return [
        column
        for column in columns
        if len({format_value(v) if not _missing(v) else None for v in runs[column]}) > 1
    ]


def _with_settings(base: str, row: pd.Series, columns: Sequence[str]) -> str:
    shown = [
        f"{short_key(column)}={dataset(row) if column == DATA else format_value(row[column])}"
        for column in columns
        if not _missing(row[column])
    ]
    return f"{base} ({', '.join(shown)})" if shown else base


def _unique(labels: pd.Series, runs: pd.DataFrame, context: Sequence[str]) -> pd.Series:
    """Labels of distinct runs that came out equal (and share the ``context`` columns) get
    their folder appended."""
    context = [runs[column].map(format_value) for column in context]
    clashes = labels.groupby([*context, labels], sort=False).transform("size") > 1
    if clashes.any() and FOLDER in runs:
        labels = labels.where(~clashes, labels + " [" + runs[FOLDER].map(str) + "]")
    return labels


def _hashable(value: Any) -> Any:
    return None if _missing(value) else value


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and value != value)
