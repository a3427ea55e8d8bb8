"""Drawing: seaborn figures of the small tables of ``nslb_cli.plot.aggregate``, in one
look (``theme``, which a ``--style`` file overrides) and one style per agent
(``style_map``); an empty ``title`` draws none.
"""

from __future__ import annotations

import contextlib
import logging
import textwrap
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from functools import cache, partial, wraps
from pathlib import Path
from typing import Any, ParamSpec, TypeVar, cast

import matplotlib
import matplotlib.style
import numpy as np
import pandas as pd
import seaborn as sns  # type: ignore[import-untyped]
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.legend import Legend
from matplotlib.lines import Line2D
from matplotlib.typing import RcKeyType
from natsort import natsorted

from nslb_cli.plot.labels import format_value
from nslb_cli.plot.layout import arrange, check_pixels, new_figure
from nslb_cli.plot.styles import LineStyle, Style
from nslb_cli.store.atomic import atomic_write

PANEL = (5.6, 3.4)  # inches of one plotting area
VECTOR_FORMATS = frozenset({"pdf", "svg", "svgz", "eps", "ps", "pgf"})
"""Formats drawn without pixels, whatever the resolution; every other is an image."""
ROUND_LABEL = "round t"
LEGEND_TITLE = "agent (seeds)"  # a legend whose entries name their seed counts
NAMES_TITLE = "agent"  # one whose agents all ran the same number of seeds, said elsewhere
PANEL_LETTERS = "abcdefghijklmnopqrstuvwxyz"
CHANGE_COLOR, CHANGE_WIDTH = "#C4C4C4", 0.8  # the true change points: light grey, thin
CHANGE_ZORDER = 0.9  # behind the bands (1) and lines (2), above the grid
ZERO_COLOR = "#555555"  # the zero line of a paired-difference figure
CHANGES_CAPTION = " Grey vertical lines: the true change points, the same on every seed."
LEGEND_WIDTH = 30  # characters; longer legend labels wrap
TITLE_WIDTH = 70  # characters; longer titles wrap
BOX_LINE, BOX_GAP = 0.16, 0.14  # inches per line of an agent's name in a box plot, and between
BAND_ALPHA = 0.2
CONTEXTS = ("paper", "notebook", "talk", "poster")  # seaborn's plotting contexts (--context)
AXES_STYLE = "whitegrid"  # the seaborn theme under nslb's look
LINE_SCALE = 4 / 3  # curves a little thicker than the context's lines: dashes stay legible
LOOK: dict[RcKeyType, Any] = {  # nslb's look over the seaborn theme (never sizes: the context's)
    "axes.edgecolor": "#BBBBBB",
    "grid.color": "#E6E6E6",
    "xtick.color": "#333333",
    "ytick.color": "#333333",
    "xtick.bottom": True,
    "ytick.left": True,
    "xtick.major.size": 3.0,
    "ytick.major.size": 3.0,
    "font.sans-serif": ["DejaVu Sans", "Arial", "Liberation Sans", "sans-serif"],
    "figure.dpi": 150,  # = the default --dpi: text laid out to measure is reused for the PNG
    "pdf.compression": 1,  # zlib's fastest level: ~20% less drawing time, ~10% larger PDFs
    "pdf.fonttype": 42,  # TrueType fonts: submission systems refuse matplotlib's Type 3
    "ps.fonttype": 42,
}
FONT_SIZES: tuple[RcKeyType, ...] = (  # relative to font.size by matplotlib's defaults
    "axes.labelsize",
    "axes.titlesize",
    "xtick.labelsize",
    "ytick.labelsize",
    "legend.fontsize",
    "legend.title_fontsize",
    "figure.titlesize",
)
IGNORED_STYLE_KEYS = frozenset(  # what a style file may not set (matplotlib ignores them too)
    {
        "backend",
        "backend_fallback",
        "interactive",
        "toolbar",
        "timezone",
        "date.epoch",
        "docstring.hardcopy",
        "figure.max_open_warning",
        "figure.raise_window",
        "savefig.directory",
        "tk.window_focus",
        "webagg.address",
        "webagg.open_in_browser",
        "webagg.port",
        "webagg.port_retries",
    }
)
P = ParamSpec("P")
R = TypeVar("R")


Theme = dict[RcKeyType, Any]  # matplotlib settings, as rc_context takes them


def theme(context: str = "paper", style: Mapping[str, Any] | None = None) -> Theme:
    """The matplotlib settings figures are drawn with: seaborn's theme and ``context``,
    ``LOOK``, then ``style`` (a style file's settings, ``read_style``), which wins."""
    if context not in CONTEXTS:
        raise ValueError(f"unknown context {context!r}; choose from {', '.join(CONTEXTS)}")
    sized = sns.plotting_context(context)
    rc: Theme = {**sns.axes_style(AXES_STYLE), **sized, **LOOK}
    rc["lines.linewidth"] = sized["lines.linewidth"] * LINE_SCALE
    if style and "font.size" in style:
        rc.update({key: matplotlib.rcParamsDefault[key] for key in FONT_SIZES if key not in style})
    rc.update(cast(Theme, style or {}))
    return rc


def read_style(source: str | Path) -> dict[str, Any]:
    """The settings of a matplotlib style file or style name; ``ValueError`` in one line."""
    path = Path(source).expanduser()
    if not path.is_file():
        library = matplotlib.style.library
        if str(source) in library:
            return {k: v for k, v in library[str(source)].items() if k not in IGNORED_STYLE_KEYS}
        raise ValueError(f"{source}: no such file (nor one of matplotlib's style names)")
    try:
        with _complaints() as complaints:
            params = matplotlib.rc_params_from_file(
                str(path), fail_on_error=True, use_default_template=False
            )
    except (OSError, ValueError, UnicodeDecodeError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ValueError(f"{source}: not a matplotlib style file ({first})") from None
    if complaints:  # matplotlib logs a line for each line it cannot read: one line here
        more = f"; {len(complaints) - 1} more such lines" if len(complaints) > 1 else ""
        raise ValueError(f"{source}: not a matplotlib style file ({complaints[0]}{more})")
    return {key: value for key, value in params.items() if key not in IGNORED_STYLE_KEYS}


@contextlib.contextmanager
def _complaints() -> Iterator[list[str]]:
    """The warnings matplotlib logs inside this block, collected instead of printed."""
    logger, heard = logging.getLogger("matplotlib"), []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            heard.append(record.getMessage().strip().splitlines()[0])

    handler, propagate = Collect(logging.WARNING), logger.propagate
    logger.addHandler(handler)
    logger.propagate = False
    try:
        yield heard
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate


_themes: list[Theme] = []  # the theme being drawn with (innermost last)


@contextlib.contextmanager
def drawing_with(rc: Theme) -> Iterator[None]:
    """Draw and save figures with ``rc`` (see ``theme``) inside this block."""
    _themes.append(dict(rc))
    try:
        with matplotlib.rc_context(_themes[-1]):
            yield
    finally:
        _themes.pop()


def current_theme() -> Theme:
    """The theme of the innermost ``drawing_with``, else the default ``theme``."""
    return _themes[-1] if _themes else _default_theme()


@cache
def _default_theme() -> Theme:
    return theme()


def themed(draw: Callable[P, R]) -> Callable[P, R]:
    """Run a drawing function with the current theme (no global matplotlib state changes)."""

    @wraps(draw)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        with matplotlib.rc_context(current_theme()):
            return draw(*args, **kwargs)

    return wrapper


def dashes(linestyle: LineStyle) -> str | tuple[float, ...]:
    """A line style as seaborn's ``dashes`` take it: ``""`` for solid, else on/off lengths."""
    if isinstance(linestyle, tuple):
        return tuple(float(x) for x in linestyle[1])
    patterns = {"--": "dashed", "-.": "dashdot", ":": "dotted"}
    if linestyle in patterns:
        key = cast(RcKeyType, f"lines.{patterns[linestyle]}_pattern")
        return tuple(matplotlib.rcParams[key])
    return ""


def curve_lines(
    axes: Axes,
    stats: pd.DataFrame,
    styles: Mapping[str, Style],
    labels: Mapping[str, str] | None = None,
) -> dict[str, Artist]:
    """Mean ± SE band per agent on ``axes``; the legend entries of the agents drawn, highest
    line end first, under ``labels`` (agent -> label; default ``legend_labels(stats)``)."""
    labels = legend_labels(stats)[0] if labels is None else labels
    counts = stats.groupby("agent", observed=True, sort=True)["n"]
    drawn = [str(agent) for agent, n in counts if n.max() > 0]
    if not drawn:
        return {}
    data = stats[stats["agent"].isin(drawn)].assign(agent=lambda f: f["agent"].astype(str))
    sns.lineplot(
        data=data,
        x="t",
        y="mean",
        hue="agent",
        style="agent",
        hue_order=drawn,
        style_order=drawn,
        palette={agent: styles[agent].color for agent in drawn},
        dashes={agent: dashes(styles[agent].linestyle) for agent in drawn},
        estimator=None,
        errorbar=None,
        sort=False,
        legend=False,
        ax=axes,
    )
    entries: dict[str, Artist] = {}
    for agent, of_agent in data.groupby("agent", sort=False):
        style = styles[agent]
        t, mean, se = (of_agent[column].to_numpy(float) for column in ("t", "mean", "se"))
        axes.fill_between(t, mean - se, mean + se, color=style.color, alpha=BAND_ALPHA, lw=0)
    last = data.dropna(subset="mean").sort_values("t").groupby("agent", sort=False)["mean"].last()
    for agent in sorted(drawn, key=lambda agent: -last.get(agent, -np.inf)):  # top line first
        style = styles[agent]
        line = Line2D([], [], color=style.color, linestyle=cast(Any, style.linestyle))
        entries[labels[agent]] = line
    return entries


def legend_labels(counts: pd.DataFrame) -> tuple[dict[str, str], str]:
    """Each agent's legend label and the legend's title, from a table of ``agent`` and ``n``
    (seeds, e.g. per round): names alone when every agent ran the same number of seeds (the
    caption or title says it once), else each with its count, which is then information."""
    by_agent = counts.groupby("agent", observed=True, sort=True)["n"]
    if common_seeds(counts) is not None:
        return {str(agent): wrap(str(agent), LEGEND_WIDTH) for agent, _ in by_agent}, NAMES_TITLE
    return {str(agent): legend_label(str(agent), n) for agent, n in by_agent}, LEGEND_TITLE


def common_seeds(counts: pd.DataFrame) -> int | None:
    """The number of seeds every agent of ``counts`` (``agent``, ``n``) ran, when it is one
    number (rounds no seed has are not counted); ``None`` when the counts differ."""
    seeds = counts.loc[counts["n"] > 0, "n"]
    return int(seeds.iloc[0]) if len(seeds) and seeds.nunique() == 1 else None


def over_seeds(counts: pd.DataFrame) -> str:
    """``over 100 seeds`` when every agent ran that many, else ``over seeds``: titles say the
    seed count the legend leaves out."""
    n = common_seeds(counts)
    return "over seeds" if n is None else f"over {n} seed{'s' * (n != 1)}"


def panel_labels(panels: Sequence[Axes]) -> None:
    """Label the panels of a figure of several (a), (b), … at their top left."""
    if len(panels) > 1:
        for letter, axes in zip(PANEL_LETTERS, panels, strict=False):
            axes.set_title(f"({letter})", loc="left", fontweight="bold")


def change_lines(axes: Axes, rounds: Sequence[int], within: pd.Series) -> None:
    """The true change points ``rounds`` inside the range of ``within`` (rounds drawn) as thin
    light grey vertical lines behind the curves."""
    if len(within):
        low, high = within.min(), within.max()
        for round_ in rounds:
            if low <= round_ <= high:
                axes.axvline(round_, color=CHANGE_COLOR, lw=CHANGE_WIDTH, zorder=CHANGE_ZORDER)


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
    changes: Sequence[int] = (),
    reference: str = "",
) -> Figure:
    """Mean ± SE of a metric against the round, one line and band per agent (one group), the
    true ``changes`` as vertical lines; no title when ``title`` is empty. With a ``reference``,
    ``stats`` are ``aggregate.paired_per_round``'s: per agent the paired difference to it (mean
    over the seeds both ran, a band of ± one paired SE) and a zero line, the reference itself."""
    figure, (axes,) = new_figure(1, PANEL)
    labels, legend_title = legend_labels(stats)
    if reference:
        axes.axhline(0.0, color=ZERO_COLOR, lw=CHANGE_WIDTH, zorder=CHANGE_ZORDER + 0.05)
        value_label = f"Δ {value_label} to {reference}"
    entries = curve_lines(axes, stats, styles, labels)
    change_lines(axes, changes, stats["t"])
    axes.set(xlabel=ROUND_LABEL, ylabel=value_label)
    if title:
        what = "paired Δ, mean ± SE" if reference else "mean ± SE"
        axes.set_title(heading(f"{title}: {what} {over_seeds(stats)}", note))
    if log_x:  # values <= 0 (an oracle's zero regret) are not drawn
        axes.set_xscale("log")
    if log_y:
        axes.set_yscale("log")
    arrange(figure, [axes], PANEL, legend=figure_legend(figure, entries, title=legend_title))
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
    """Box plot of ``value`` per agent with every seed a (seeded, jittered) dot."""
    agents = [str(a) for a in final["agent"].cat.categories if (final["agent"] == a).any()]
    counts = final.groupby("agent", observed=True)["seed"].nunique().rename("n").reset_index()
    labels = legend_labels(counts)[0]
    names = [labels[agent] for agent in agents]
    lines = max(name.count("\n") + 1 for name in names)
    panel = (PANEL[0], max(PANEL[1] * 0.75, (BOX_LINE * lines + BOX_GAP) * len(agents)))
    figure, (axes,) = new_figure(1, panel)
    data = final.loc[final[value].notna(), ["agent", value]]
    data = data.assign(agent=data["agent"].astype(str))
    palette = {agent: styles[agent].color for agent in agents}
    common: dict[str, Any] = {"x": value, "hue": "agent", "hue_order": agents}
    common |= {"palette": palette, "legend": False, "ax": axes}
    with warnings.catch_warnings():  # seaborn 0.13 passes matplotlib 3.11 a deprecated vert=
        warnings.filterwarnings("ignore", message="vert: bool", category=DeprecationWarning)
        sns.boxplot(
            data=data, y="agent", order=agents, **common,
            dodge=False, fill=False, width=0.6, showfliers=False, linewidth=1.2,
        )  # fmt: skip
    jitter = np.random.default_rng(0).uniform(-0.2, 0.2, len(data))  # the same dots every run
    dots = data.assign(row=data["agent"].map(agents.index).to_numpy(float) + jitter)
    sns.scatterplot(data=dots, y="row", **common, s=7, alpha=0.6, linewidth=0)
    axes.set_yticks(range(len(agents)), names)
    axes.set_ylim(len(agents) - 0.4, -0.6)
    axes.grid(False, axis="y")
    axes.set(xlabel=value_label, ylabel="")
    if title:
        n = common_seeds(counts)
        each = f", {n} seed{'s' * (n != 1)} per agent" if n is not None else ""
        axes.set_title(heading(f"{title}: one dot per seed{each}", note))
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
    log_x: bool | None = None,
    reference: str = "",
) -> Figure:
    """Mean ± SE of a final value against a swept parameter, one line per agent;
    ``references``: agents without it, as horizontal lines with their SE band. Numeric values
    all above 0 are on a log axis where ``log_x``, or, where it is ``None``, where they span
    more than a decade (the largest over 10 times the smallest). With a ``reference``, the
    values are paired differences to it (``env_sweeps``) and a zero line is the reference."""
    figure, (axes,) = new_figure(1, PANEL)
    if reference:
        axes.axhline(0.0, color=ZERO_COLOR, lw=CHANGE_WIDTH, zorder=CHANGE_ZORDER + 0.05)
        value_label = f"Δ {value_label} to {reference}"
    entries: dict[str, Any] = {}  # legend label -> handle (an errorbar container, a line)
    numeric = pd.api.types.is_numeric_dtype(points["x"].infer_objects())
    categories = natsorted({str(value) for value in points["x"]}) if not numeric else []
    for agent, of_agent in points.groupby("agent", sort=False):
        style = styles[str(agent)]
        at = of_agent["x"] if numeric else of_agent["x"].map(lambda v: categories.index(str(v)))
        of_agent = of_agent.assign(at=at).sort_values("at")
        x = of_agent["at"].to_numpy(float)
        label = legend_label(str(agent), of_agent["n"])
        entries[label] = axes.errorbar(
            x,
            of_agent["mean"],
            yerr=of_agent["se"].fillna(0),
            color=style.color,
            ls=style.linestyle,
            marker=style.marker,
            capsize=3,
        )
    for row in (references if references is not None else pd.DataFrame()).itertuples():
        style = styles[str(row.agent)]
        label = legend_label(str(row.agent), pd.Series([row.n]))
        entries[label] = axes.axhline(row.mean, color=style.color, ls=style.linestyle, lw=1.2)
        if np.isfinite(row.se):
            axes.axhspan(row.mean - row.se, row.mean + row.se, color=style.color, alpha=0.12, lw=0)
    if numeric:
        values = points["x"].to_numpy(float)
        decade = values.max() > 10 * values.min()
        if values.min() > 0 and (decade if log_x is None else log_x):
            axes.set_xscale("log")
            axes.set_xticks(sorted(set(values)), [format_value(v) for v in sorted(set(values))])
            axes.minorticks_off()
    else:
        axes.set_xticks(range(len(categories)), categories)
    axes.set(xlabel=parameter, ylabel=value_label)
    if title:
        what = "paired Δ, mean ± SE" if reference else "mean ± SE"
        axes.set_title(heading(f"{title}: {what} over seeds", ""))
    arrange(figure, [axes], PANEL, legend=figure_legend(figure, entries))
    return figure


def figure_legend(
    figure: Figure, entries: Mapping[str, Any], columns: int = 1, title: str = LEGEND_TITLE
) -> Legend | None:
    """One legend of ``entries`` (label -> handle) in ``columns`` columns, for
    ``arrange`` to place."""
    if not entries:
        return None
    return figure.legend(
        list(entries.values()),
        list(entries),
        loc="upper left",
        borderaxespad=0,
        frameon=False,
        title=title,
        alignment="left",
        ncols=columns,
    )


def legend_label(agent: str, counts: pd.Series) -> str:
    """``agent (n=100)``, or ``(n=40–100)`` when the seed count varies (partial files)."""
    counts = counts[counts > 0] if (counts > 0).any() else counts
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


def save(figure: Figure, stem: Path, formats: Iterable[str], dpi: int) -> list[Path]:
    """Write ``stem.<format>`` for each format, each whole or not at all; images within
    ``MAX_PIXELS``."""
    paths = [stem.parent / f"{stem.name}.{fmt}" for fmt in formats]
    if any(path.suffix[1:] not in VECTOR_FORMATS for path in paths):
        width, height = figure.get_size_inches()
        check_pixels(width, height, dpi, f"{stem.name}: {dpi} dpi")
    with matplotlib.rc_context(current_theme()):
        for path in paths:
            atomic_write(path, partial(figure.savefig, format=path.suffix[1:], dpi=dpi))
    return paths
