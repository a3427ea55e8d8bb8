"""One colour, line style and marker per agent label, the same in every figure of a report.

nslb's agents (the paper's and the field's) shown under their plain names (``mTS``,
``CD-UCB``, ``SW-UCB``, …, even renamed) always get the style of :data:`FIXED`, in every
report, so the figures ``make paper`` makes and any later ``nslb plot`` agree. An *ordered
sweep*, the labels of one agent that differ in a numeric setting (``CD-UCB (tau=20)`` …
``CD-UCB (tau=800)``, see :func:`~nslb_cli.plot.labels.ordered_families`), gets one hue,
light to dark in the order of the setting's values (a seaborn blend palette through the
hue), and the agent's line style: its lines read as one family and each matches its legend
entry by shade. The hue is the agent's :data:`FIXED` colour for the first family of a paper
agent, else the next free colour. Every other label (an agent of your own, a label with
settings outside a family) gets the next colour that no plain paper agent or family of the
report uses, in natural order of the labels, and the next line style and marker: with up to
:data:`N_COLORS` (27) labels in a report every colour is distinct, each far from the others,
and the (colour, line style) pairs stay distinct far beyond that.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import seaborn as sns  # type: ignore[import-untyped]
from matplotlib.colors import to_hex, to_rgb
from natsort import natsorted

LineStyle = str | tuple[int, tuple[int, ...]]


@dataclass(frozen=True)
class Style:
    """How one agent is drawn."""

    color: str
    linestyle: LineStyle
    marker: str


# The paper's agents (keyed by agent name): model-based TS solid, baselines broken lines; then
# the field's baselines. Every colour here and in EXTRA_COLORS is at least 18 CIELAB units
# (Delta E 1976) from every other, so that up to 27 agents in one figure are told apart.
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
    "sw_ucb": Style("#332288", "--", "<"),
    "d_ucb": Style("#88CCEE", "-.", ">"),
    "cusum_ucb": Style("#8C564B", ":", "h"),
    "glr_klucb": Style("#DDCC77", (0, (5, 1)), "p"),
    "d_ts": Style("#EE3377", "-.", "d"),
    "sw_ts": Style("#800000", "--", "H"),
    "bocd_ts": Style("#B2DF8A", (0, (3, 1, 1, 1)), "8"),
}
EXTRA_COLORS = (
    "#FB9A99",
    "#CAB2D6",
    "#A6761D",
    "#00A2FF",
    "#FFBB78",
    "#C49C94",
    "#7570B3",
    "#F0E442",
)
N_COLORS = len(FIXED) + len(EXTRA_COLORS)
LINESTYLES: tuple[LineStyle, ...] = ("-", "--", "-.", ":", (0, (5, 1)), (0, (3, 1, 1, 1, 1, 1)))
MARKERS = ("o", "s", "^", "v", "D", "P", "X", "*")
LIGHTEST, DARKEST = 0.62, 0.45  # a family's ends: its hue mixed with this much white, black


def style_map(
    labels: Iterable[str],
    plain: Mapping[str, str],
    families: Sequence[Sequence[str]] = (),
    agents: Mapping[str, str] | None = None,
) -> dict[str, Style]:
    """A style for every label.

    ``plain`` maps a label that is an agent's plain name to that agent's name (``{"mTS":
    "mts"}``), which gives it the agent's :data:`FIXED` style. ``families`` are ordered
    sweeps (labels in the order of their setting's values) and ``agents`` the agent name of
    their labels: each family gets one hue, light to dark.
    """
    labels = list(dict.fromkeys(labels))
    agents = agents or {}
    styles = {label: FIXED[plain[label]] for label in labels if plain.get(label) in FIXED}
    taken = {style.color for style in styles.values()}
    free = [c for c in (*EXTRA_COLORS, *(s.color for s in FIXED.values())) if c not in taken]
    ramps: list[tuple[list[str], Style]] = []
    own_hue_used: set[str] = set()
    for family in families:
        members = [label for label in family if label in labels and label not in styles]
        if len(members) < 2:
            continue
        agent = agents.get(members[0], "")
        if agent in FIXED and agent not in own_hue_used:
            own_hue_used.add(agent)
            base = FIXED[agent]
        else:
            color = free.pop(0) if free else EXTRA_COLORS[len(ramps) % len(EXTRA_COLORS)]
            base = FIXED.get(agent, Style(color, LINESTYLES[len(ramps) % len(LINESTYLES)], "o"))
            base = Style(color, base.linestyle, base.marker)
        for label, color in zip(members, ramp(base.color, len(members)), strict=True):
            styles[label] = Style(color, base.linestyle, base.marker)
        ramps.append((members, base))
    taken = {style.color for style in styles.values()}
    free = [c for c in free if c not in taken]
    others = natsorted(label for label in labels if label not in styles)
    colors = free or list(EXTRA_COLORS)
    for i, label in enumerate(others):
        slot, cycle = i % len(colors), i // len(colors)  # another round: shifted line styles
        line = LINESTYLES[(slot + cycle) % len(LINESTYLES)]
        styles[label] = Style(colors[slot], line, MARKERS[i % len(MARKERS)])
    return styles


def ramp(color: str, n: int) -> list[str]:
    """``n`` shades of ``color``, light to dark (seaborn's blend palette from the colour
    mixed with white, through it, to the colour mixed with black): strictly darker along the
    list, so an ordered sweep reads from its first value to its last."""
    rgb = to_rgb(color)
    light = tuple(c + (1 - c) * LIGHTEST for c in rgb)
    dark = tuple(c * (1 - DARKEST) for c in rgb)
    return [to_hex(shade) for shade in sns.blend_palette([light, rgb, dark], n_colors=n)]
