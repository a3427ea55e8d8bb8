"""Summary tables as text: markdown for reading, LaTeX for a paper, CSV for further analysis,
from ``nslb_cli.plot.aggregate.summary``'s table (``92.6 ± 2.6``: the SE to two significant
digits, the mean to the same place; CSV numbers to ``CSV_DIGITS`` significant digits).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from nslb_cli.plot import labels as lab
from nslb_cli.plot.aggregate import COST, METRICS, PAIRED_METRIC, SUMMARY_METRICS, stat_columns
from nslb_cli.plot.latex import tabular
from nslb_cli.store.atomic import atomic_write_text

MAX_DECIMALS = 6
CSV_DIGITS = 12
CSV_FLOAT = f"%.{CSV_DIGITS}g"


def format_pm(mean: float, se: float, signed: bool = False) -> str:
    """``mean ± se`` rounded to the SE's second significant digit; the mean alone without SE."""
    sign = "+" if signed else ""
    if math.isnan(mean):
        return "–"
    if math.isnan(se):
        return f"{mean:{sign}.4g}"
    decimals = _decimals(se)
    return f"{mean:{sign}.{decimals}f} ± {se:.{decimals}f}"


def format_ci(mean: float, se: float, low: float, high: float, signed: bool = False) -> str:
    """``mean ± se [low, high]``: ``format_pm`` and the interval to the same place."""
    text = format_pm(mean, se, signed)
    if math.isnan(low) or math.isnan(high):
        return text
    decimals = 3 if math.isnan(se) else _decimals(se)
    sign = "+" if signed else ""
    return f"{text} [{low:{sign}.{decimals}f}, {high:{sign}.{decimals}f}]"


def format_value(value: float, like: float) -> str:
    """``value`` to the decimal place ``format_pm`` gives a mean whose SE is ``like``."""
    if math.isnan(value):
        return "–"
    return f"{value:.4g}" if math.isnan(like) else f"{value:.{_decimals(like)}f}"


def grid(header: Sequence[str], rows: Iterable[Sequence[str]], align: str = "") -> list[str]:
    """A markdown table's lines: ``header``, the alignment row (``align``: one ``l`` or ``r``
    a column; default the first left, the others right) and a line per row of cells."""
    align = align or "l" + "r" * (len(header) - 1)
    marks = "|".join("---:" if a == "r" else "---" for a in align)
    return [_line(header), f"|{marks}|", *map(_line, rows)]


def _line(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _decimals(se: float) -> int:
    return 3 if se == 0 else min(max(1 - math.floor(math.log10(se)), 0), MAX_DECIMALS)


COST_TITLE = "s / 1k seed-rounds"  # the column of aggregate.COST
BETTER = {"cum_regret": min, "avg_reward": max}  # of each summary metric, the best value
Ranked = dict[int, Callable[..., float]]  # a column ranked -> which of its values is best


@dataclass(frozen=True)
class Cells:
    """A summary table's text, built once for Markdown and LaTeX alike: the ``header``,
    the ``rows`` of cell texts and the ``bold`` ``(row, column)`` cells, each column's best."""

    header: list[str]
    rows: list[list[str]]
    bold: set[tuple[int, int]]


def summary_cells(table: pd.DataFrame, stats: Sequence[str] = ()) -> Cells:
    """One group's summary (rows of ``summary``) as cells, the ``stats`` some agent here
    has in one column; in bold each metric's best mean and IQM and the best paired difference
    (ties: every tied cell)."""
    reference = next((r for r in table["reference"] if r), "")
    shown_stats = {
        stat: columns
        for stat, columns in stat_columns(stats).items()
        if columns[0] in table and table[columns[0]].notna().any()
    }
    header = ["agent", "seeds"]
    ranked: Ranked = {}
    for name in SUMMARY_METRICS:
        ranked[len(header)] = ranked[len(header) + 1] = BETTER[name]
        header += [f"final {METRICS[name].label}", "IQM"]
    if reference:  # the reference's own cell reads "(reference)": not ranked
        ranked[len(header)] = BETTER[PAIRED_METRIC]
    against = f" vs {reference}" if reference else ""
    header += [f"Δ {METRICS[PAIRED_METRIC].label}{against} (paired)", "paired seeds", COST_TITLE]
    if shown_stats:
        header.append("per-seed statistics")
    rows = [_row_cells(row, reference, shown_stats) for _, row in table.iterrows()]
    return Cells(header, rows, _best_cells(rows, ranked))


def _row_cells(
    row: pd.Series, reference: str, shown_stats: dict[str, tuple[str, str]]
) -> list[str]:
    """The cells of one agent's row of ``summary_cells``."""
    bootstrap = f"{SUMMARY_METRICS[0]}_ci_low" in row
    cells = [str(row["agent"]), str(row["n_seeds"])]
    for name in SUMMARY_METRICS:
        cells += [
            _cell(row, name, bootstrap),
            format_value(row[f"{name}_iqm"], row[f"{name}_se"]),
        ]
    if not reference:
        cells += ["no reference agent", ""]
    elif row["agent"] == reference:
        cells += ["(reference)", ""]
    else:
        pairs = "0" if pd.isna(row["n_pairs"]) else str(row["n_pairs"])
        cells += [_cell(row, f"diff_{PAIRED_METRIC}", bootstrap, signed=True), pairs]
    cells.append(format_seconds(row.get(COST, math.nan)))
    if shown_stats:
        cells.append(
            ", ".join(
                f"{stat} {format_pm(row[mean], row[se])}"
                for stat, (mean, se) in shown_stats.items()
                if not pd.isna(row[mean])
            )
        )
    return cells


def _best_cells(rows: list[list[str]], ranked: Ranked) -> set[tuple[int, int]]:
    """The ``(row, column)`` cells holding the best value as printed (``ranked``: per column,
    ``min`` or ``max``) of a column with two values or more: cells that read the same tie."""
    bold = set()
    for j, better in ranked.items():
        array = np.array([_printed_number(row[j]) for row in rows], dtype=np.float64)
        present = ~np.isnan(array)
        if present.sum() > 1:
            best = better(array[present])
            bold |= {(int(i), j) for i in np.flatnonzero(present & (array == best))}
    return bold


def _printed_number(cell: str) -> float:
    """The number a cell shows first (``+4.2`` of ``+4.2 ± 0.3``); NaN for ``–`` or words."""
    try:
        return float(cell.split(" ", 1)[0])
    except ValueError:
        return math.nan


def markdown(
    table: pd.DataFrame, *, title: str, details: str = "", stats: Sequence[str] = ()
) -> str:
    """One group's summary (rows of ``summary``) as markdown,
    the ``stats`` some agent here has in one column."""
    cells = summary_cells(table, stats)
    lines = [f"### {title}", "", *([details, ""] if details else [])]
    return "\n".join(lines + grid(cells.header, cells.rows)) + "\n"


def latex(table: pd.DataFrame, stats: Sequence[str] = ()) -> str:
    """One group's summary as a booktabs ``tabular``: the cells of ``markdown``, each
    column's best value in bold."""
    cells = summary_cells(table, stats)
    return tabular(cells.header, cells.rows, bold=cells.bold)


def format_seconds(seconds: float) -> str:
    """Seconds to three significant digits, without an exponent; ``–`` for NaN (not recorded)."""
    if math.isnan(seconds):
        return "–"
    if seconds == 0:
        return "0"
    return f"{seconds:.{max(2 - math.floor(math.log10(abs(seconds))), 0)}f}"


def _cell(row: pd.Series, prefix: str, bootstrap: bool, signed: bool = False) -> str:
    mean, se = row[f"{prefix}_mean"], row[f"{prefix}_se"]
    if bootstrap:
        return format_ci(mean, se, row[f"{prefix}_ci_low"], row[f"{prefix}_ci_high"], signed)
    return format_pm(mean, se, signed)


def csv_table(table: pd.DataFrame, settings: Sequence[str]) -> pd.DataFrame:
    """``table`` with only the ``settings`` columns that vary: that take two or more values
    among the rows that record them (a recorded null is a value), or that some row's label
    names (a value other than the agent's default)."""
    named: set[str] = set()
    if lab.AGENT in table:
        for _, row in table.iterrows():
            named |= set(lab.non_default(row, settings))
    constant = [
        column
        for column in settings
        if column in table
        and column not in named
        and len({lab.format_value(v) for v in table[column] if not lab.absent(v)}) < 2
    ]
    return table.drop(columns=constant)


def write(table: pd.DataFrame, text: str, stem: Path, settings: Sequence[str] = ()) -> list[Path]:
    """Write ``stem.md`` (``text``) and ``stem.csv`` (``table``: the ``settings`` that vary
    among its rows, numbers to ``CSV_DIGITS`` significant digits)."""
    paths = [stem.parent / f"{stem.name}.md", stem.parent / f"{stem.name}.csv"]
    atomic_write_text(paths[0], text)
    csv = csv_table(table, settings).to_csv(index=False, float_format=CSV_FLOAT)
    atomic_write_text(paths[1], csv)
    return paths


DETECTION_STATS = {
    "detections": "detections",
    "false_alarms": "false alarms",
    "missed_changes": "missed changes",
    "mean_delay": "mean delay (rounds)",
}  # the per-seed statistics of detections (docs/design.md §6) and their column titles


def detection_table(summary: pd.DataFrame, settings: Sequence[str]) -> tuple[pd.DataFrame, str]:
    """The rows of ``summary`` whose seeds record how their detections match the true
    changes, with ``DETECTION_STATS``, and that table as markdown (empty when none)."""
    columns = stat_columns(list(DETECTION_STATS))
    pairs = list(columns.values())
    marker = columns["false_alarms"][0]
    if marker not in summary:
        return summary.iloc[0:0], ""
    rows = summary[summary[marker].notna()]
    header = ["agent", "seeds", *DETECTION_STATS.values()]
    lines = ["## How fast changes are found", ""]
    for group, part in rows.groupby("group", sort=False, observed=True):
        cells = [
            [str(row["agent"]), str(row["n_seeds"])]
            + [format_pm(row.get(mean, math.nan), row.get(se, math.nan)) for mean, se in pairs]
            for _, row in part.iterrows()
        ]
        lines += [f"### {group}", "", *grid(header, cells), ""]
    keep = ["group", "agent", lab.AGENT, *settings, "n_seeds"]
    keep += [column for pair in pairs for column in pair]
    text = "\n".join(lines) if len(rows) else ""
    return rows[[column for column in keep if column in rows]], text
