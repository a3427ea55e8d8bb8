"""The paper's figures in the paper's layout (``nslb plot DIR --paper``): Hong et al.
(AISTATS 2021) section 5's figures 2-4 from the runs of the ``paper/…`` presets (see
``FIGURES``), untitled, panels sharing their y axis, each caption in a file beside it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd
from matplotlib.figure import Figure
from matplotlib.legend import Legend

from nslb_cli.plot import labels as lab
from nslb_cli.plot.aggregate import METRICS
from nslb_cli.plot.figures import (
    CHANGES_CAPTION,
    PANEL_LETTERS,
    ROUND_LABEL,
    Theme,
    change_lines,
    current_theme,
    curve_lines,
    drawing_with,
    figure_legend,
    legend_labels,
    panel_labels,
    themed,
)
from nslb_cli.plot.layout import arrange, arrange_to_width, fits, new_figure
from nslb_cli.plot.styles import Style

PANEL = (4.2, 3.0)  # inches: smaller than a report figure's, as in a two-column paper
COLUMNS = {"single": 3.25, "double": 6.75}  # inches: a two-column template's column, text
MIN_WIDTH, MAX_WIDTH = 2.0, 20.0  # inches a --width may ask for
PAGE_FONTS: Theme = {  # points, at the printed size (--width): none below 7
    "font.size": 8.0, "axes.labelsize": 8.0, "axes.titlesize": 8.0, "xtick.labelsize": 7.0,
    "ytick.labelsize": 7.0, "legend.fontsize": 7.0, "legend.title_fontsize": 7.0,
    "lines.linewidth": 1.0, "axes.linewidth": 0.6, "xtick.major.width": 0.6,
    "ytick.major.width": 0.6, "xtick.major.size": 2.5, "ytick.major.size": 2.5,
}  # fmt: skip
ASPECT = 0.75  # a panel's height over its width at a --width
# paper/fixed, smoke/paper/fixed, family/switching_latent, smoke/family/switching_latent,
# offline/data_size
PRESET = re.compile(r"(^|/)(?P<family>paper|family|offline)/(?P<preset>[\w-]+)$")


def _order(run: pd.Series) -> str:
    """``k5``: a ``family/latent_ar`` group by its AR order."""
    return f"k{lab.format_value(run.get('env.order'))}"


def _logged(run: pd.Series) -> str:
    """``n100``: an ``offline/data_size`` group by its logged rounds; ``known``: the known
    model's (another model, ``prior``, by its name)."""
    model = lab.format_value(run.get("env.model"))
    return f"n{lab.format_value(run.get('env.offline_rounds'))}" if model == "learned" else model


SPLIT = {"latent_ar": _order, "data_size": _logged}
"""A preset over several environments: the part of each group's key after the preset's."""


@dataclass(frozen=True)
class PaperFigure:
    """One of the paper's figures: its number, metric, panels and caption."""

    number: int
    metric: str
    panels: tuple[tuple[str, str], ...]  # (preset, what the panel shows)
    caption: str  # ``{n}``: the number of runs (seeds)

    @property
    def stem(self) -> str:
        return f"figure{self.number}"


FIGURES = (
    PaperFigure(
        2,
        "cum_regret",
        (("fixed", "fixed change-points"),),
        "mean and standard error of regret across {n} runs with fixed change-points",
    ),
    PaperFigure(
        3,
        "avg_reward",
        (
            ("known", "random latent states, fixed model"),
            ("prior", "random latent states, uncertain model"),
        ),
        "mean and standard error of reward across {n} runs in synthetic scenarios",
    ),
    PaperFigure(
        4,
        "avg_reward",
        (("movielens", "MovieLens"),),
        'mean and standard error of reward across {n} "superusers" in MovieLens',
    ),
)


def preset_groups(
    runs: pd.DataFrame, seeds: Mapping[int, int], warn: Callable[[str], None]
) -> dict[str, str]:
    """The group drawn for each preset present in ``runs`` (keyed by ``preset_key``): of
    several, the most seeds'."""
    sizes: dict[str, dict[str, int]] = {}
    for index, row in runs.iterrows():
        key = preset_key(row)
        if key is not None:
            groups = sizes.setdefault(key, {})
            groups[row[lab.GROUP]] = groups.get(row[lab.GROUP], 0) + seeds.get(index, 0)
    chosen = {}
    for key, groups in sizes.items():
        chosen[key] = max(groups, key=lambda group: groups[group])
        others = [group for group in groups if group != chosen[key]]
        if others:
            warn(
                f"--paper: preset {key} has several groups; drawn: {chosen[key]}; "
                f"not drawn: {'; '.join(others)}"
            )
    return chosen


def preset_key(run: pd.Series) -> str | None:
    """The preset a run belongs to by its experiment name: ``fixed`` for ``paper/fixed`` (and
    ``smoke/paper/fixed``), ``switching_latent`` for ``family/switching_latent``; a preset of
    ``SPLIT`` adds its environment's part (``latent_ar/k5``, ``data_size/n100``); ``None`` for
    other names."""
    match = PRESET.search(lab.format_value(run[lab.NAME]))
    if match is None:
        return None
    preset = match["preset"]
    return f"{preset}/{SPLIT[preset](run)}" if preset in SPLIT else preset


@themed
def draw(
    figure_spec: PaperFigure,
    panels: list[pd.DataFrame],
    styles: Mapping[str, Style],
    width: float | None = None,
    changes: Sequence[Sequence[int]] = (),
) -> Figure:
    """One paper figure: each panel a group's per-round stats (with its true ``changes`` as
    vertical lines), panels (a), (b), one legend, shared y axis; at a ``width`` (inches) as
    printed: ``PAGE_FONTS``, the legend below."""
    page = dict(current_theme())
    if width:
        page.update(PAGE_FONTS)
    with drawing_with(page):
        figure, axes = new_figure(len(panels), PANEL)
        entries: dict[str, Any] = {}
        labels, title = legend_labels(pd.concat(panels)[["agent", "n"]])
        for i, (ax, stats) in enumerate(zip(axes, panels, strict=True)):
            if i:
                ax.sharey(axes[0])
            entries |= curve_lines(ax, stats, styles, labels)
            change_lines(ax, changes[i] if i < len(changes) else (), stats["t"])
            ax.set(xlabel=ROUND_LABEL, ylabel="" if i else METRICS[figure_spec.metric].label)
        panel_labels(axes)
        if width:
            legend = _page_legend(figure, entries, width, title)
            arrange_to_width(figure, axes, width, ASPECT, legend)
        else:
            arrange(figure, axes, PANEL, legend=figure_legend(figure, entries, title=title))
    return figure


def _page_legend(
    figure: Figure, entries: dict[str, Any], width: float, title: str
) -> Legend | None:
    """The legend of ``entries`` in as many columns as fit ``width`` inches."""
    for columns in range(len(entries), 1, -1):
        legend = figure_legend(figure, entries, columns=columns, title=title)
        if legend is None or fits(figure, legend, width):
            return legend
        legend.remove()
    return figure_legend(figure, entries, title=title)


def caption(
    figure_spec: PaperFigure,
    panels: list[tuple[str, str, str]],
    seeds: list[int],
    changes: Sequence[Sequence[int]] = (),
) -> str:
    """The caption of a paper figure: the paper's sentence, each panel ``(what, group, notes)``
    and what the bands and lines are; ``seeds``: the seed counts of the agents drawn (named in
    the legend only where they differ); ``changes``: each panel's true change points."""
    counts = sorted(set(seeds))
    n = str(counts[-1]) if len(counts) == 1 else f"{counts[0]}–{counts[-1]}"
    text = f"Figure {figure_spec.number}: {figure_spec.caption.format(n=n)}."
    parts = []
    for i, (what, group, notes) in enumerate(panels):
        place = f"({PANEL_LETTERS[i]}) {('left', 'right')[i] if len(panels) == 2 else ''}".strip()
        detail = "; ".join(filter(None, [group, notes]))
        parts.append(f"{place + ': ' if len(panels) > 1 else ''}{what} ({detail})")
    text += " " + "; ".join(part[0].upper() + part[1:] for part in parts) + "."
    text += " Lines: mean over seeds; bands: ± one standard error"
    text += "; n in the legend: seeds per agent" if len(counts) > 1 else ""
    return text + "." + (CHANGES_CAPTION if any(changes) else "") + "\n"
