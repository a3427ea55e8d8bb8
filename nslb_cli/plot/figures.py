"""Drawing: figures from the small tables of :mod:`nslb_cli.plot.aggregate`.

Every plotting area has a fixed size (:data:`PANEL` inches) and the figure grows around it
(:mod:`~nslb_cli.plot.layout`): the legend sits on the right, never over a curve, and
nothing is clipped, whether a group has two agents or twenty. Agents are drawn in the
styles of one :func:`~nslb_cli.plot.styles.style_map` per report, so an agent looks the same
in every figure. Legends give each agent's seed count. Nothing here reads results or
computes statistics beyond drawing them.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial, wraps
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.legend import Legend
from matplotlib.typing import RcKeyType
from natsort import natsorted

from nslb_cli.plot.layout import arrange, new_figure
from nslb_cli.plot.styles import Style
from nslb_cli.store.atomic import atomic_write

PANEL = (5.6, 3.4)  # inches of one plotting area
ROUND_LABEL = "round t"
LEGEND_TITLE = "agent (seeds)"
LEGEND_WIDTH = 30  # characters; longer legend labels wrap
TITLE_WIDTH = 70  # characters; longer titles wrap
BOX_LINE, BOX_GAP = 0.16, 0.14  # inches per line of an agent's name in a box plot, and between
BAND_ALPHA = 0.2
THEME: dict[RcKeyType, Any] = {
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.labelsize": 9,
    "legend.fontsize": 8.5,
    "legend.title_fontsize": 9,
    "axes.edgecolor": "#BBBBBB",
    "axes.grid": True,
    "grid.color": "#E6E6E6",
    "grid.linewidth": 0.8,
    "xtick.color": "#333333",
    "ytick.color": "#333333",
    "lines.linewidth": 1.6,
    "figure.dpi": 150,  # = the default --dpi: text laid out to measure is reused for the PNG
    "pdf.compression": 1,  # zlib's fastest level: ~20% less drawing time, ~10% larger PDFs
}
P = ParamSpec("P")
R = TypeVar("R")


def themed(draw: Callable[P, R]) -> Callable[P, R]:
    """Run a drawing function with :data:`THEME` (no global matplotlib state changes)."""

    @wraps(draw)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        with matplotlib.rc_context(THEME):
            return draw(*args, **kwargs)

    return wrapper


def curve_lines(axes: Axes, stats: pd.DataFrame, styles: Mapping[str, Style]) -> list[str]:
    """Mean ± SE band per agent on ``axes``; return the agents drawn (label order).

    ``stats`` has columns ``agent, t, mean, se, n`` (one group); agents without any value
    of the metric (e.g. ``p_true_state`` of an agent without a belief) are left out.
    """
    drawn = []
    for agent, of_agent in stats.groupby("agent", observed=True, sort=True):
        if of_agent["n"].max() == 0:
            continue
        style = styles[str(agent)]
        t, mean, se = (of_agent[column].to_numpy(float) for column in ("t", "mean", "se"))
        label = legend_label(str(agent), of_agent["n"])
        axes.plot(t, mean, color=style.color, ls=style.linestyle, label=label)
        axes.fill_between(t, mean - se, mean + se, color=style.color, alpha=BAND_ALPHA, lw=0)
        drawn.append(str(agent))
    return drawn


@themed
def curves(
    stats: pd.DataFrame,
    *,
    value_label: str,
    title: str,
    styles: Mapping[str, Style],
    note: str = "",
    log_x: bool = False,
    log_y: bool = False,
) -> Figure:
    """Mean ± SE of a metric against the round, one line and band per agent (one group)."""
    figure, (axes,) = new_figure(1, PANEL)
    curve_lines(axes, stats, styles)
    axes.set(xlabel=ROUND_LABEL, ylabel=value_label)
    axes.set_title(heading(f"{title}: mean ± SE over seeds", note))
    scales(axes, log_x, log_y)
    arrange(figure, [axes], PANEL, legend=figure_legend(figure, [axes]))
    return figure


@themed
def final_distribution(
    final: pd.DataFrame,
    *,
    value: str,
    value_label: str,
    title: str,
    styles: Mapping[str, Style],
    note: str = "",
) -> Figure:
    """Box plot with every seed as a dot: ``value`` per agent (one group's final rows)."""
    agents = [str(a) for a in final["agent"].cat.categories if (final["agent"] == a).any()]
    counts = final.groupby("agent", observed=True)["seed"].nunique()
    names = [legend_label(agent, pd.Series([counts[agent]])) for agent in agents]
    lines = max(name.count("\n") + 1 for name in names)
    panel = (PANEL[0], max(PANEL[1] * 0.75, (BOX_LINE * lines + BOX_GAP) * len(agents)))
    figure, (axes,) = new_figure(1, panel)
    rows = np.arange(len(agents))[::-1]  # the first agent on top
    data = [final.loc[final["agent"] == agent, value].to_numpy(float) for agent in agents]
    boxes = axes.boxplot(
        [values[~np.isnan(values)] for values in data],
        positions=rows,
        orientation="horizontal",
        widths=0.6,
        showfliers=False,
        patch_artist=False,
    )
    jitter = np.random.default_rng(0)
    for i, (agent, values, row) in enumerate(zip(agents, data, rows, strict=True)):
        color = styles[agent].color
        for part in ("boxes", "medians"):
            boxes[part][i].set_color(color)
        for part in ("whiskers", "caps"):
            for line in boxes[part][2 * i : 2 * i + 2]:
                line.set_color(color)
        offsets = jitter.uniform(-0.2, 0.2, len(values))
        axes.scatter(values, row + offsets, s=6, color=color, alpha=0.6, lw=0)
    axes.set_yticks(rows, names)
    axes.set_ylim(-0.6, len(agents) - 0.4)
    axes.grid(False, axis="y")
    axes.set_xlabel(value_label)
    axes.set_title(heading(f"{title}: one dot per seed", note))
    arrange(figure, [axes], panel)
    return figure


@themed
def sweep(
    points: pd.DataFrame,
    *,
    parameter: str,
    value_label: str,
    title: str,
    styles: Mapping[str, Style],
    references: pd.DataFrame | None = None,
) -> Figure:
    """Mean ± SE (error bars) of a final value against a swept parameter, one line per agent.

    ``points`` has columns ``agent, x, mean, se, n``; numbers on the x axis are spaced by
    value (logarithmically when they span more than a decade), anything else as categories
    in natural order. ``references`` (``agent, mean, se, n``) are agents without the
    parameter, drawn as horizontal lines with their SE band.
    """
    figure, (axes,) = new_figure(1, PANEL)
    shown = []  # legend labels of the swept agents, in their order
    numeric = pd.api.types.is_numeric_dtype(points["x"].infer_objects())
    categories = natsorted({str(value) for value in points["x"]}) if not numeric else []
    for agent, of_agent in points.groupby("agent", sort=False):
        style = styles[str(agent)]
        if numeric:
            of_agent = of_agent.sort_values("x")
            x = of_agent["x"].to_numpy(float)
        else:
            of_agent = of_agent.assign(at=[categories.index(str(v)) for v in of_agent["x"]])
            of_agent = of_agent.sort_values("at")
            x = of_agent["at"].to_numpy(float)
        shown.append(legend_label(str(agent), of_agent["n"]))
        axes.errorbar(
            x,
            of_agent["mean"],
            yerr=of_agent["se"].fillna(0),
            color=style.color,
            ls=style.linestyle,
            marker=style.marker,
            capsize=3,
            label=shown[-1],
        )
    for row in (references if references is not None else pd.DataFrame()).itertuples():
        style = styles[str(row.agent)]
        label = legend_label(str(row.agent), pd.Series([row.n]))
        axes.axhline(row.mean, color=style.color, ls=style.linestyle, lw=1.2, label=label)
        if np.isfinite(row.se):
            axes.axhspan(row.mean - row.se, row.mean + row.se, color=style.color, alpha=0.12, lw=0)
    if numeric:
        values = points["x"].to_numpy(float)
        if values.min() > 0 and values.max() / values.min() > 10:
            axes.set_xscale("log")
            axes.set_xticks(sorted(set(values)), [_number(v) for v in sorted(set(values))])
            axes.minorticks_off()
    else:
        axes.set_xticks(range(len(categories)), categories)
    axes.set(xlabel=parameter, ylabel=value_label)
    axes.set_title(heading(f"{title}: mean ± SE over seeds", ""))
    arrange(figure, [axes], PANEL, legend=figure_legend(figure, [axes], shown))
    return figure


def figure_legend(
    figure: Figure, panels: Sequence[Axes], order: Sequence[str] = ()
) -> Legend | None:
    """One legend for ``panels`` (each label once; labels in ``order`` first, in that
    order), for :func:`~layout.arrange` to place."""
    entries: dict[str, Artist] = {}
    for axes in panels:
        for handle, label in zip(*axes.get_legend_handles_labels(), strict=True):
            entries.setdefault(label, handle)
    first = [label for label in order if label in entries]
    entries = {label: entries[label] for label in [*first, *entries]}
    if not entries:
        return None
    return figure.legend(
        list(entries.values()),
        list(entries),
        loc="upper left",
        borderaxespad=0,
        frameon=False,
        title=LEGEND_TITLE,
        alignment="left",
    )


def legend_label(agent: str, counts: pd.Series) -> str:
    """``agent (n=100)``, or ``(n=40–100)`` when the seed count varies (partial files)."""
    low, high = int(counts.min()), int(counts.max())
    seeds = f"n={high}" if low == high else f"n={low}–{high}"
    return wrap(f"{agent} ({seeds})", LEGEND_WIDTH)


def heading(title: str, note: str) -> str:
    """A panel title, wrapped, with an optional note on its own line."""
    lines = [wrap(title, TITLE_WIDTH), *([wrap(note, TITLE_WIDTH)] if note else [])]
    return "\n".join(lines)


def wrap(text: str, width: int) -> str:
    """``text`` on lines of at most ``width`` characters, broken at spaces only."""
    return "\n".join(textwrap.wrap(text, width, break_on_hyphens=False, break_long_words=False))


def scales(axes: Axes, log_x: bool, log_y: bool) -> None:
    """Logarithmic axes where asked (values <= 0, an oracle's zero regret, are not drawn)."""
    if log_x:
        axes.set_xscale("log")
    if log_y:
        axes.set_yscale("log")


def save(figure: Figure, stem: Path, formats: Iterable[str], dpi: int) -> list[Path]:
    """Write ``stem.<format>`` for each format, each whole or not at all (a killed or
    concurrent plot never leaves half a figure); return the paths."""
    paths = [stem.parent / f"{stem.name}.{fmt}" for fmt in formats]
    with matplotlib.rc_context(THEME):
        for path in paths:
            atomic_write(path, partial(figure.savefig, format=path.suffix[1:], dpi=dpi))
    return paths


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"
