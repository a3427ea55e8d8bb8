"""One colour, line style and marker per agent label, the same in every figure of a report.

An agent's own ``style`` is used under its plain name; an
ordered sweep (``ordered_families``) gets one hue, light to dark;
every other label the next free colour (``EXTRA_COLORS``, then nslb's agents' colours),
line style and marker, in natural order of the labels.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from functools import cache

import seaborn as sns  # type: ignore[import-untyped]
from matplotlib.colors import to_hex, to_rgb
from natsort import natsorted

from nslb_cli.agents import AGENTS
from nslb_cli.agents.base import LineStyle, Style
from nslb_cli.plot.labels import agent_class, legend_key

# The colours of labels without a style of their own come first from EXTRA_COLORS, then from
# nslb's agents' own styles (Agent.style), each skipped where a plain agent of the report has
# it. Every colour here and in the agents' styles is at least 18 CIELAB units (Delta E 1976)
# from every other, so that up to 27 agents in one figure are told apart.
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
LINESTYLES: tuple[LineStyle, ...] = ("-", "--", "-.", ":", (0, (5, 1)), (0, (3, 1, 1, 1, 1, 1)))
MARKERS = ("o", "s", "^", "v", "D", "P", "X", "*")
LIGHTEST, DARKEST = 0.62, 0.45  # a family's ends: its hue mixed with this much white, black


def own_style(agent: str) -> Style | None:
    """The style agent ``agent`` declares (``style``), if any."""
    cls = agent_class(agent)
    return None if cls is None else cls.style


@cache
def built_in_styles() -> dict[str, Style]:
    """The styles nslb's own agents declare, in legend order."""
    names = [name for name in AGENTS if not AGENTS.foreign(name)]
    return {name: style for name in sorted(names, key=legend_key) if (style := own_style(name))}


def style_map(
    labels: Iterable[str],
    plain: Mapping[str, str],
    families: Sequence[Sequence[str]] = (),
    agents: Mapping[str, str] | None = None,
) -> dict[str, Style]:
    """A style for every label: ``plain`` labels (label -> agent name) their agent's own,
    each of ``families`` (ordered sweeps; ``agents``: their labels' agent names) one hue."""
    labels = list(dict.fromkeys(labels))
    agents = agents or {}
    styles = {
        label: style for label in labels if label in plain and (style := own_style(plain[label]))
    }
    taken = {style.color for style in styles.values()}
    spare = (style.color for style in built_in_styles().values())
    free = [c for c in (*EXTRA_COLORS, *spare) if c not in taken]
    ramps: list[tuple[list[str], Style]] = []
    own_hue_used: set[str] = set()
    for family in families:
        members = [label for label in family if label in labels and label not in styles]
        if len(members) < 2:
            continue
        agent = agents.get(members[0], "")
        own = own_style(agent)
        if own is not None and agent not in own_hue_used:
            own_hue_used.add(agent)
            base = own
        else:
            color = free.pop(0) if free else EXTRA_COLORS[len(ramps) % len(EXTRA_COLORS)]
            base = own or Style(color, LINESTYLES[len(ramps) % len(LINESTYLES)], "o")
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
    """``n`` shades of ``color``, strictly light to dark (seaborn's blend palette)."""
    rgb = to_rgb(color)
    light = tuple(c + (1 - c) * LIGHTEST for c in rgb)
    dark = tuple(c * (1 - DARKEST) for c in rgb)
    return [to_hex(shade) for shade in sns.blend_palette([light, rgb, dark], n_colors=n)]
