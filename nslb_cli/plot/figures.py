"""Drawing: figures from the small tables of :mod:`nslb_cli.plot.aggregate` (seaborn style).

Every figure has a fixed size (``FIGSIZE`` inches at the caller's dpi: a saved PNG is exactly
``FIGSIZE * dpi`` pixels) and its legend outside the axes, on the right, so it never covers
a curve. Colours come from one palette over every agent label, so an agent keeps its colour
across figures. Nothing here reads results or computes statistics beyond drawing them.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, never a display

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

FIGSIZE = (7.5, 4.2)
ROUND_LABEL = "round t"
LONG_LABEL = 32  # characters; longer legend labels go below the axes, not beside
Color = tuple[float, float, float]


def palette(labels: Sequence[str]) -> dict[str, Color]:
    """One distinct colour per label, colour-blind friendly for up to ten labels."""
    name = "colorblind" if len(labels) <= 10 else "husl"
    return dict(zip(labels, sns.color_palette(name, len(labels)), strict=True))


def _figure() -> tuple[Figure, plt.Axes]:
    sns.set_theme(style="whitegrid", context="notebook", font_scale=0.9)
    figure, axes = plt.subplots(figsize=FIGSIZE, layout="constrained")
    return figure, axes


def _legend(figure: Figure, axes: plt.Axes, title: str | None = None) -> None:
    """The legend beside the axes, or below them when its labels are long."""
    handles, names = axes.get_legend_handles_labels()
    if not handles:
        return
    if max(map(len, names)) <= LONG_LABEL:
        figure.legend(handles, names, loc="outside right upper", title=title, frameon=False)
    else:
        figure.legend(handles, names, loc="outside lower center", title=title, frameon=False)


def curves(
    stats: pd.DataFrame,
    *,
    value_label: str,
    title: str,
    colors: Mapping[str, Color],
    log_x: bool = False,
    log_y: bool = False,
) -> Figure:
    """Mean ± SE of a metric against the round, one line and band per agent.

    ``stats`` has columns ``agent, t, mean, se, n`` (one group); the legend shows each
    agent's seed count, so partial sweeps are visible. Agents without any value of the
    metric are left out.
    """
    figure, axes = _figure()
    for agent, of_agent in stats.groupby("agent", observed=True, sort=True):
        if of_agent["n"].max() == 0:
            continue  # no values at all, e.g. p_true_state of an agent without a belief
        color = colors[str(agent)]
        t, mean, se = (of_agent[column].to_numpy() for column in ("t", "mean", "se"))
        axes.plot(t, mean, color=color, lw=1.6, label=f"{agent} (n={of_agent['n'].max()})")
        axes.fill_between(t, mean - se, mean + se, color=color, alpha=0.25, lw=0)
    axes.set(xlabel=ROUND_LABEL, ylabel=value_label, title=f"{title}: mean ± SE over seeds")
    _scales(axes, log_x, log_y)
    _legend(figure, axes, title="agent (seeds)")
    return figure


def final_distribution(
    final: pd.DataFrame, *, value: str, value_label: str, title: str, colors: Mapping[str, Color]
) -> Figure:
    """Box plot with every seed as a dot: ``value`` per agent (one group's final rows)."""
    figure, axes = _figure()
    agents = [str(a) for a in final["agent"].cat.categories if (final["agent"] == a).any()]
    counts = final.groupby("agent", observed=True)["seed"].nunique()
    data = final.assign(agent=final["agent"].astype(str))
    shown = {agent: colors[agent] for agent in agents}
    common = {"data": data, "x": value, "y": "agent", "hue": "agent", "order": agents}
    with warnings.catch_warnings():  # seaborn 0.13 passes `vert`, deprecated in matplotlib 3.11
        warnings.filterwarnings("ignore", "vert: bool", matplotlib.MatplotlibDeprecationWarning)
        sns.boxplot(**common, palette=shown, legend=False, ax=axes, fill=False, fliersize=0)
    sns.stripplot(**common, palette=shown, legend=False, ax=axes, size=3, alpha=0.6, jitter=0.2)
    axes.set_yticks(range(len(agents)), [f"{a}\n(n={counts[a]})" for a in agents])
    axes.set(xlabel=value_label, ylabel="", title=f"{title}: one dot per seed")
    return figure


def sweep(
    points: pd.DataFrame,
    *,
    parameter: str,
    value_label: str,
    title: str,
    colors: Mapping[str, Color],
    references: pd.DataFrame | None = None,
) -> Figure:
    """Mean ± SE (error bars) of a final value against a swept parameter, one line per agent.

    ``points`` has columns ``agent, x, mean, se, n``; numbers on the x axis are spaced by
    value (logarithmically when they span a decade or more), anything else as categories.
    ``references`` (``agent, mean, se``) are agents without the parameter, drawn as
    horizontal lines with their SE band.
    """
    figure, axes = _figure()
    numeric = pd.api.types.is_numeric_dtype(points["x"].infer_objects())
    categories = _categories(points["x"]) if not numeric else []
    for agent, of_agent in points.groupby("agent", sort=False):
        of_agent = of_agent.sort_values("x") if numeric else of_agent
        if numeric:
            x = of_agent["x"].to_numpy(float)
        else:
            x = [categories.index(str(value)) for value in of_agent["x"]]
        low, high = of_agent["n"].min(), of_agent["n"].max()
        axes.errorbar(
            x,
            of_agent["mean"],
            yerr=of_agent["se"].fillna(0),
            color=colors.get(str(agent)),
            marker="o",
            capsize=3,
            label=f"{agent} (n={low})" if low == high else f"{agent} (n={low}–{high})",
        )
    for row in (references if references is not None else pd.DataFrame()).itertuples():
        color = colors.get(str(row.agent))
        axes.axhline(row.mean, color=color, ls="--", lw=1.2, label=f"{row.agent} (n={row.n})")
        if np.isfinite(row.se):
            axes.axhspan(row.mean - row.se, row.mean + row.se, color=color, alpha=0.15, lw=0)
    if numeric:
        values = points["x"].to_numpy(float)
        if values.min() > 0 and values.max() / values.min() >= 10:
            axes.set_xscale("log")
    else:
        axes.set_xticks(range(len(categories)), categories)
    axes.set(xlabel=parameter, ylabel=value_label, title=f"{title}: mean ± SE over seeds")
    _legend(figure, axes, title="agent (seeds)")
    return figure


def save(figure: Figure, stem: Path, formats: Iterable[str], dpi: int) -> list[Path]:
    """Write ``stem.<format>`` for each format, close the figure, return the paths."""
    paths = [stem.parent / f"{stem.name}.{fmt}" for fmt in formats]
    for path in paths:
        figure.savefig(path, dpi=dpi)
    plt.close(figure)
    return paths


def _scales(axes: plt.Axes, log_x: bool, log_y: bool) -> None:
    if log_x:
        axes.set_xscale("log")
    if log_y:
        axes.set_yscale("log")  # values <= 0 (an oracle's zero regret) are not drawn


def _categories(values: pd.Series) -> list[str]:
    return list(dict.fromkeys(str(v) for v in values))
