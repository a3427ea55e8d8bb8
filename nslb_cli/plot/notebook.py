"""Results as pandas frames, for notebooks: the tables ``nslb plot`` draws and writes.

``load_results`` reads a results folder into one tidy frame, one row per agent, seed
and round; ``summarise`` turns such a frame into ``nslb plot``'s ``summary.csv``. Both
read files only (examples: README, *Results in Python*); the frame's columns are those of
``summary.csv`` where they mean the same.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from nslb_cli.plot import aggregate, selection, tables, tidy
from nslb_cli.plot import labels as lab
from nslb_cli.plot.aggregate import CI_METHODS, DEFAULT_METRICS, DEFAULT_REFERENCE, METRICS
from nslb_cli.plot.identity import DATA, DATA_SOURCE
from nslb_cli.store.results import COLUMNS

Rounds = int | str | tuple[int | None, int | None] | None
KEYS = ("group", "agent", lab.AGENT)


def load_results(
    folder: str | Path | Sequence[str | Path],
    rounds: Rounds = None,
    metrics: Iterable[str] = DEFAULT_METRICS,
    *,
    agents: Sequence[str] = (),
    rename: Mapping[str, str] | None = None,
) -> pd.DataFrame:
    """Every result under ``folder`` as one tidy frame: one row per agent, seed and round.

    Args:
        folder: a results folder, e.g. ``"outputs/"`` or ``"outputs/paper/fixed"``, or a
            list of them (their runs labelled and grouped together, as one folder's).
        rounds: ``None`` (all), ``END`` (rounds 1 … END), ``(START, END)`` (either may be
            ``None``) or ``"START:END"``, as ``nslb plot --rounds`` takes it.
        metrics: per-round metrics, among ``cum_regret``, ``avg_reward`` (the running mean
            of the reward), ``avg_regret``, ``cum_reward``, ``reward``, ``regret``,
            ``p_true_state``.
        agents: only these agents (agent or display names), in this order.
        rename: show an agent (agent or display name) under another label.

    Returns:
        Columns, in order: ``group`` (the experiment and environment, as ``nslb plot`` titles
        it), ``agent`` (the label: the display name and the settings that differ from the
        agent's defaults, e.g. ``CD-UCB (tau=50)``), ``agent.name`` (``cd_ucb``), every
        config key whose value differs between runs (``agent.tau``, ``env.switch_prob``, …;
        numeric where every run's value is a number, else categorical), ``data`` (the
        identity of the data a run simulated, see ``identity``; only when
        a run has data), ``seed``, ``t``, the ``metrics`` (float64: the values the result
        files hold, every digit, or running means of them), then the per-seed statistics of the
        agents (``detections``, ``resamples``, ``stat_gamma`` …, from ``seed=K.json``; named
        ``stat_<name>`` where a setting has the name; float64, the same on every round of a
        seed, NaN where an agent has none), and ``seconds_per_1k_seed_rounds`` where a run
        recorded how long its seeds took to simulate (1000 x a seed's share of its batch's
        wall-clock seconds / its rounds). ``group``, ``agent`` and ``agent.name`` are
        ordered categoricals in legend order. Files that cannot be read are left out, each
        with a warning.

    Example:
        >>> frame = load_results("outputs/paper/fixed", rounds=(None, 1000))
        >>> final = frame[frame["t"] == 1000]
        >>> final.groupby("agent", observed=True)["cum_regret"].describe()
    """
    metrics = list(dict.fromkeys(metrics))
    unknown = [m for m in metrics if m not in METRICS]
    if unknown:
        raise ValueError(f"unknown metrics {unknown}; choose from {', '.join(METRICS)}")
    roots = [Path(f).expanduser() for f in ([folder] if isinstance(folder, str | Path) else folder)]
    for root in roots:
        if not root.is_dir():
            raise FileNotFoundError(f"{root}: no such folder")
    columns = sorted({METRICS[m].column for m in metrics})
    loaded = tidy.load(roots, columns, join_config=False)
    for skipped in loaded.skipped:
        warnings.warn(f"skipped {skipped}", stacklevel=2)
    for line in tidy.mixed_makers(loaded):
        warnings.warn(line, stacklevel=2)
    if loaded.frame.empty:  # the same words as nslb plot's
        what = "no readable results" if loaded.n_files else "no results"
        where = ", ".join(map(str, roots))
        raise ValueError(
            f"{what} in {where}: no complete seed=K.csv files (or results.parquet) below it"
        )
    warn = functools.partial(warnings.warn, stacklevel=2)
    frame, runs = selection.select(
        loaded.frame, loaded.runs, agents, selection.rounds_range(rounds), warn
    )
    present = set(frame["run"].unique().tolist())
    runs = runs.loc[[r for r in runs.index if r in present]]
    frame, runs = aggregate.labelled(frame, runs, rename, lab.agent_order(runs, agents))
    result = _tidy(frame, runs, _varying(runs, loaded.config_columns), metrics)
    settings = {key.rsplit(".", 1)[-1] for key in loaded.config_columns}
    return _with_seed_stats(result, frame, loaded.seed_stats, settings)


def summarise(
    frame: pd.DataFrame,
    reference: str | None = None,
    ci: str = "se",
) -> pd.DataFrame:
    """The summary table of a tidy frame (``load_results``, or any frame with its
    columns): one row per group and agent, as ``nslb plot`` writes ``summary.csv``.

    The final values of each seed are those of its last round in ``frame`` (filter rounds to
    summarise at another one); every statistic is computed in float64.

    Args:
        frame: needs ``agent``, ``seed``, ``t`` and ``cum_regret``, and ``avg_reward`` or
            ``cum_reward``; ``group`` (one group when absent), ``agent.name``, config keys
            (names with a dot, ``data``) and per-seed statistics (any other numeric column)
            are used when present.
        reference: the agent of the paired differences in every group, as ``nslb plot
            --reference`` takes it (a name, a label, or ``umts(num_particles=100)``); one that
            names no agent or several in a group raises ``ValueError``. ``None``: mTS where
            exactly one run of it is present; ``""`` or ``"none"``: no differences.
        ci: ``"se"``, or ``"bootstrap"`` for a seeded 95 % bootstrap interval of each mean
            and paired difference beside mean ± SE.

    Returns:
        ``group, agent, agent.name``, the config keys that vary among the rows, ``n_seeds,
        final_t``, then ``cum_regret_mean, _se, _iqm`` (and ``_ci_low, _ci_high``), the same
        for ``avg_reward``, ``seconds_per_1k_seed_rounds`` (the mean over the seeds whose
        time was recorded; NaN where none was), ``reference``, ``diff_cum_regret_mean, _se``
        (and ``_ci_low, _ci_high``), ``n_pairs``, and ``<statistic>_mean, _se`` for each
        per-seed statistic.

    Example:
        >>> table = summarise(load_results("outputs/sweep"), reference="cd_ucb(tau=100)")
        >>> table[["agent", "agent.tau", "cum_regret_mean", "diff_cum_regret_mean"]]
    """
    if ci not in CI_METHODS:
        raise ValueError(f"ci must be one of {', '.join(CI_METHODS)}, got {ci!r}")
    needed = {"agent", "seed", "t", "cum_regret"}
    if not needed <= set(frame.columns) or not {"avg_reward", "cum_reward"} & set(frame.columns):
        raise ValueError(
            "summarise needs the columns agent, seed, t, cum_regret and avg_reward (or "
            f"cum_reward); the frame has {', '.join(map(str, frame.columns))}"
        )
    frame = frame if "group" in frame else frame.assign(group="all")
    by = ["group", "agent", "seed"]
    last = frame.groupby(by, observed=True, sort=False)["t"].idxmax()
    final = frame.loc[last.to_numpy()].reset_index(drop=True)
    final["cum_regret"] = final["cum_regret"].to_numpy(np.float64)
    if "cum_reward" in final:
        cum_reward = final["cum_reward"].to_numpy(np.float64)
        final["avg_reward"] = cum_reward / final["t"].to_numpy(np.float64)
    else:
        final["avg_reward"] = final["avg_reward"].to_numpy(np.float64)
    if lab.AGENT not in final:
        final[lab.AGENT] = final["agent"].astype(str)
    settings = [
        c for c in final.columns if c not in KEYS and ("." in str(c) or c in (DATA, lab.NAME))
    ]
    known = {*KEYS, *settings, "seed", "t", "run", *METRICS, *COLUMNS, aggregate.COST}
    stats = [
        c for c in final.columns if c not in known and pd.api.types.is_numeric_dtype(final[c].dtype)
    ]
    named = {c: c.removeprefix("stat_") for c in stats if c.removeprefix("stat_") not in final}
    final, stats = final.rename(columns=named), [named.get(c, c) for c in stats]  # as plot's
    for column in stats:
        final[column] = final[column].astype(np.float64)
    runs = final.drop_duplicates(["group", "agent"]).assign(
        **{lab.GROUP: lambda f: f["group"].astype(str), lab.LABEL: lambda f: f["agent"].astype(str)}
    )
    runs = runs.assign(**{c: _values(runs[c]) for c in settings})
    given = "" if reference is None or reference.strip().lower() == "none" else reference.strip()
    selector = DEFAULT_REFERENCE if reference is None else given
    try:
        found, _ = lab.references(runs, selector or None, required=reference is not None)
    except lab.SelectionError as err:
        raise ValueError(f"reference: {err}") from None
    for column in settings:
        final[column] = _values(final[column])
    table = aggregate.summary(final, found, settings=settings, stats=stats, ci=ci)
    return tables.csv_table(table, settings)


def _values(column: pd.Series) -> pd.Series:
    """A setting's values as Python objects, a missing one (``pd.NA`` of a number column
    included) as NaN: not recorded, as a categorical's missing value reads."""
    return column.astype(object).where(column.notna(), np.nan)


def _varying(runs: pd.DataFrame, config_columns: Sequence[str]) -> list[str]:
    """The config keys with two or more values among ``runs`` (a recorded null is a value),
    the experiment ``name`` first; the agent's name and the data are columns of their own."""
    own = (lab.NAME, lab.AGENT, DATA, *DATA_SOURCE)
    keys = [key for key in config_columns if key not in own and key in runs]
    varying = lab.varying_columns(runs, keys)
    if lab.NAME in runs and runs[lab.NAME].map(str).nunique() > 1:
        varying.insert(0, lab.NAME)
    return varying


def _tidy(
    frame: pd.DataFrame, runs: pd.DataFrame, varying: Sequence[str], metrics: Sequence[str]
) -> pd.DataFrame:
    """The labelled rows as the tidy frame: keys, the ``varying`` settings (numbers as numbers,
    else categorical), the data, seed, t and the ``metrics``."""
    run = frame["run"].to_numpy(np.intp)
    out: dict[str, object] = {key: frame[key] for key in ("group", "agent")}
    out[lab.AGENT] = frame[lab.AGENT].cat.as_ordered()
    size = int(runs.index.max()) + 1 if len(runs) else 0
    has_data = DATA in runs and not runs[DATA].map(lab.missing).all()
    for key in [*varying, DATA] if has_data else varying:
        values = [runs[key].get(r) for r in runs.index]
        if all(lab.is_number(v) or lab.missing(v) for v in values):  # numbers stay numbers
            numbers = np.full(size, np.nan)
            numbers[runs.index] = [np.nan if lab.missing(v) else v for v in values]
            whole = all(float(v).is_integer() for v in numbers[runs.index] if v == v)
            out[key] = pd.array(numbers[run], dtype="Int64" if whole else "float64")
            continue
        per_run = pd.Categorical([lab.hashable(v) for v in values])
        codes = np.full(size, -1, dtype=np.int32)
        codes[runs.index] = per_run.codes
        out[key] = pd.Categorical.from_codes(codes[run], per_run.categories)
    out |= {"seed": frame["seed"], "t": frame["t"]}
    for metric in metrics:  # the values read from the results, or running means of them
        out[metric] = METRICS[metric].values(frame).to_numpy(np.float64)
    return pd.DataFrame(out, index=frame.index, copy=False).reset_index(drop=True)


def _with_seed_stats(
    result: pd.DataFrame, frame: pd.DataFrame, seed_stats: pd.DataFrame, settings: set[str]
) -> pd.DataFrame:
    """``result`` with a column per statistic of ``seed_stats`` on its (run, seed)'s rows;
    one named as a column or a setting is ``stat_<name>``."""
    names = [c for c in seed_stats.columns if c not in ("run", "seed")]
    if not names or result.empty:
        return result
    span = int(max(frame["seed"].max(), seed_stats["seed"].max())) + 1
    keys = seed_stats["run"].to_numpy(np.int64) * span + seed_stats["seed"].to_numpy(np.int64)
    order = np.argsort(keys)
    rows = frame["run"].to_numpy(np.int64) * span + frame["seed"].to_numpy(np.int64)
    position = order[np.searchsorted(keys[order], rows)]
    taken = set(result.columns) | settings
    for name in names:
        column = name if name not in taken else f"stat_{name}"
        result[column] = seed_stats[name].to_numpy(np.float64)[position]
    return result


def palette(labels: Iterable[str]) -> dict[str, str]:
    """nslb's colour of each agent label, for plots of your own
    (``sns.lineplot(…, hue="agent", palette=nslb_cli.palette(frame["agent"].unique()))``):
    the paper's agents under their display names (``mTS``, ``CD-UCB``) their fixed colours,
    as in every figure of ``nslb plot``, other labels the next free ones, in natural order
    (``nslb plot`` shades the labels of one agent's sweep in one hue instead)."""
    from nslb_cli.plot.styles import built_in_styles, style_map

    labels = [str(label) for label in dict.fromkeys(labels)]
    plain = {lab.display_name(name): name for name in built_in_styles()}
    return {label: style.color for label, style in style_map(labels, plain).items()}


__all__ = ["load_results", "palette", "summarise"]
