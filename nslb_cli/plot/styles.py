"""One colour, line style and marker per agent label, the same in every figure of a report.

The paper's agents shown under their plain names (``mTS``, ``CD-UCB``, …, even renamed)
always get the style of :data:`FIXED`, in every report, so the figures ``make paper`` makes
and any later ``nslb plot`` agree. Every other label (an agent with settings, ``umTS
(num_particles=10)``, or an agent of your own) gets the next colour that no plain paper
agent of the report uses, in natural order of the labels, and the next line style and
marker: with up to :data:`N_COLORS` labels in a report every colour is distinct, and the
(colour, line style) pairs stay distinct far beyond that.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from natsort import natsorted

LineStyle = str | tuple[int, tuple[int, ...]]


@dataclass(frozen=True)
class Style:
    """How one agent is drawn."""

    color: str
    linestyle: LineStyle
    marker: str


# The paper's agents (keyed by agent name): model-based TS solid, baselines broken lines.
FIXED = {
    "mts": Style("#0072B2", "-", "o"),
    "umts": Style("#D55E00", "-", "s"),
    "cd_ucb": Style("#009E73", "--", "^"),
    "cd_ts": Style("#CC79A7", "-.", "v"),
    "cd_linucb": Style("#117733", "--", "^"),
    "cd_lints": Style("#AA4499", "-.", "v"),
    "exp4s": Style("#E69F00", ":", "D"),
    "exp3s": Style("#882255", ":", "D"),
    "sw_mucb": Style("#999933", (0, (5, 1)), "P"),
    "sw_umucb": Style("#44AA99", (0, (5, 1)), "P"),
    "oracle": Style("#000000", (0, (1, 1)), "*"),
    "random": Style("#7F7F7F", (0, (3, 1, 1, 1)), "X"),
}
EXTRA_COLORS = (
    "#56B4E9",
    "#332288",
    "#8C564B",
    "#E377C2",
    "#DDAA33",
    "#9467BD",
    "#8B0000",
    "#17BECF",
)
N_COLORS = len(FIXED) + len(EXTRA_COLORS)
LINESTYLES: tuple[LineStyle, ...] = ("-", "--", "-.", ":", (0, (5, 1)), (0, (3, 1, 1, 1, 1, 1)))
MARKERS = ("o", "s", "^", "v", "D", "P", "X", "*")


def style_map(labels: Iterable[str], plain: Mapping[str, str]) -> dict[str, Style]:
    """A style for every label; ``plain`` maps a label that is an agent's plain name to that
    agent's name (``{"mTS": "mts"}``), which gives it the agent's :data:`FIXED` style."""
    labels = list(dict.fromkeys(labels))
    styles = {label: FIXED[plain[label]] for label in labels if plain.get(label) in FIXED}
    taken = {style.color for style in styles.values()}
    free = [c for c in (*EXTRA_COLORS, *(s.color for s in FIXED.values())) if c not in taken]
    others = natsorted(label for label in labels if label not in styles)
    colors = free or list(EXTRA_COLORS)
    for i, label in enumerate(others):
        slot, cycle = i % len(colors), i // len(colors)  # another round: shifted line styles
        line = LINESTYLES[(slot + cycle) % len(LINESTYLES)]
        styles[label] = Style(colors[slot], line, MARKERS[i % len(MARKERS)])
    return styles
