"""The paper's figures in the paper's layout (``nslb plot DIR --paper``).

Hong et al. (AISTATS 2021), section 5, from the runs of the presets (``experiment=paper/…``,
or their ``smoke`` variants), one file each, numbered as in the paper:

* ``figure2`` — cumulative regret, fixed change-points (``paper/fixed``);
* ``figure3`` — average reward, random latent states, two panels side by side:
  (a) known model (``paper/known``), (b) uncertain model, agents given priors
  (``paper/prior``);
* ``figure4`` — average reward on MovieLens (``paper/movielens``), when its results exist.

A figure is drawn when at least one of its panels has results. When several groups share a
preset's name (e.g. runs at another horizon), the one with the most seed files is drawn and
the others are named in a notice.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import pandas as pd
from matplotlib.figure import Figure

from nslb_cli.plot import labels as lab
from nslb_cli.plot.aggregate import METRICS
from nslb_cli.plot.figures import ROUND_LABEL, curve_lines, figure_legend, themed, wrap
from nslb_cli.plot.identity import DATA, dataset
from nslb_cli.plot.layout import arrange, new_figure
from nslb_cli.plot.styles import Style

PANEL = (4.2, 3.0)  # inches: smaller than a report figure's, as in a two-column paper
PRESET = re.compile(r"(^|/)paper/(?P<preset>[\w-]+)$")  # paper/fixed, smoke/paper/fixed


@dataclass(frozen=True)
class PaperFigure:
    """One of the paper's figures: its number, metric, panels and caption."""

    number: int
    metric: str
    panels: tuple[tuple[str, str], ...]  # (preset, panel title)
    caption: str  # ``{n}``: the number of runs (seeds)

    @property
    def stem(self) -> str:
        return f"figure{self.number}"


FIGURES = (
    PaperFigure(
        2,
        "cum_regret",
        (("fixed", "Fixed change-points"),),
        "Figure 2: mean and standard error of regret across {n} runs with fixed change-points",
    ),
    PaperFigure(
        3,
        "avg_reward",
        (
            ("known", "(a) Random latent states, fixed model"),
            ("prior", "(b) Random latent states, uncertain model"),
        ),
        "Figure 3: mean and standard error of reward across {n} runs in synthetic scenarios",
    ),
    PaperFigure(
        4,
        "avg_reward",
        (("movielens", "MovieLens"),),
        'Figure 4: mean and standard error of reward across {n} "superusers" in MovieLens',
    ),
)


def preset_groups(
    runs: pd.DataFrame, seeds: Mapping[int, int], warn: Callable[[str], None]
) -> dict[str, str]:
    """The group drawn for each preset present in ``runs`` (a ``group`` column; ``seeds``:
    the seed count of each run), the largest when a preset's name has several."""
    sizes: dict[str, dict[str, int]] = {}
    for index, row in runs.iterrows():
        match = PRESET.search(lab.format_value(row[lab.NAME]))
        if match:
            groups = sizes.setdefault(match["preset"], {})
            groups[row[lab.GROUP]] = groups.get(row[lab.GROUP], 0) + seeds.get(index, 0)
    chosen = {}
    for preset, groups in sizes.items():
        chosen[preset] = max(groups, key=lambda group: groups[group])
        others = [group for group in groups if group != chosen[preset]]
        if others:
            warn(
                f"--paper: paper/{preset} has several groups; drawn: {chosen[preset]}; "
                f"not drawn: {'; '.join(others)}"
            )
    return chosen


def panel_title(title: str, run: pd.Series) -> str:
    """A panel's title, with the dataset of a data-driven environment."""
    return f"{title} ({dataset(run)})" if not pd.isna(run.get(DATA)) else title


@themed
def draw(
    figure_spec: PaperFigure,
    panels: list[tuple[str, pd.DataFrame]],
    styles: Mapping[str, Style],
) -> Figure:
    """One paper figure: each ``(title, per-round stats of its group)`` a panel, one legend."""
    figure, axes = new_figure(len(panels), PANEL)
    runs = set()
    for ax, (title, stats) in zip(axes, panels, strict=True):
        curve_lines(ax, stats, styles)
        ax.set(xlabel=ROUND_LABEL, ylabel=METRICS[figure_spec.metric].label)
        ax.set_title("\n".join(wrap(line, 48) for line in title.splitlines()))
        runs |= set(stats["n"].unique())
    counts = sorted(int(n) for n in runs if n > 0)
    shown = str(counts[-1]) if len(counts) == 1 else f"{counts[0]}–{counts[-1]}"
    caption = wrap(figure_spec.caption.format(n=shown), 60 * len(panels))
    heading = figure.text(0, 1, caption, ha="left", va="top", fontsize=10)
    arrange(figure, axes, PANEL, legend=figure_legend(figure, axes), title=heading)
    return figure
