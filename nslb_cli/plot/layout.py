"""Figures whose plotting areas keep their size: the figure grows around them
(``new_figure``, then ``arrange`` once everything is drawn), and no image exceeds
``MAX_PIXELS`` (``check_pixels``).
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence
from typing import cast

import numpy as np
from matplotlib.axes import Axes
from matplotlib.axis import Axis, XAxis
from matplotlib.backend_bases import RendererBase
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.legend import Legend

from nslb_cli.plot.selection import PlotError

PAD = 0.1  # inches between the canvas edge and anything on it
GAP = 0.25  # inches between neighbours: panels, the legend
TICK_GAP = 2.0  # points of space kept between neighbouring tick labels
SMALLEST_PANEL = (4.0, 2.5)  # inches: no plotting area is smaller (see new_figure)
NARROWEST = 1.2  # inches: panels narrower side by side go one under another (arrange_to_width)
SMALLEST_FIGURE = (SMALLEST_PANEL[0] + 2 * PAD, SMALLEST_PANEL[1] + 2 * PAD)
"""Inches no figure is smaller than: a plotting area and the padding around it."""
MAX_PIXELS = 100_000_000
"""The most pixels a figure's image may have: 100 megapixels, a 9 x 5-inch figure at
1,490 dpi (0.5 GB and 5 s to write as PNG, measured), well beyond print resolutions.
matplotlib's own limit, 2^23 pixels a side, would let one image take 256 TB."""


class TooLarge(PlotError):
    """A figure whose image would have more than ``MAX_PIXELS`` pixels; one line."""


def check_pixels(width: float, height: float, dpi: float, what: str, least: bool = False) -> None:
    """Raise ``TooLarge`` naming ``what`` and the largest dpi that fits if ``width x
    height`` inches at ``dpi`` exceed ``MAX_PIXELS`` (``least``: the smallest figure)."""
    pixels = (round(width * dpi), round(height * dpi))
    if pixels[0] * pixels[1] <= MAX_PIXELS:
        return
    most = math.floor(math.sqrt(MAX_PIXELS / (width * height)))
    size, inches = f"{pixels[0]:,} × {pixels[1]:,}", f"{width:,.1f} × {height:,.1f} inches"
    drawn = f"figures of {size} pixels or more" if least else f"a {size}-pixel figure ({inches})"
    raise TooLarge(
        f"{what} would draw {drawn}; at most {MAX_PIXELS:,} pixels a figure: "
        f"use {most:,} dpi or less"
    )


def new_figure(n_panels: int, panel: tuple[float, float]) -> tuple[Figure, list[Axes]]:
    """A figure with ``n_panels`` axes of ``panel`` inches each (at least
    ``SMALLEST_PANEL``), within ``MAX_PIXELS``."""
    width, height = panel
    if width < SMALLEST_PANEL[0] or height < SMALLEST_PANEL[1]:
        raise ValueError(f"a plotting area of {panel} inches: smaller than {SMALLEST_PANEL}")
    canvas = (n_panels * (width + 4) + 6, height + 4)
    figure = Figure(figsize=canvas)
    check_pixels(*canvas, figure.dpi, f"figure.dpi {figure.dpi:g}")
    FigureCanvasAgg(figure)
    axes = []
    for i in range(n_panels):
        size = figure.get_size_inches()
        left = (2 + i * (width + 4)) / size[0]
        axes.append(figure.add_axes((left, 2 / size[1], width / size[0], height / size[1])))
    return figure, axes


def arrange(
    figure: Figure,
    panels: Sequence[Axes],
    panel: tuple[float, float],
    legend: Legend | None = None,
) -> None:
    """Size ``figure`` around ``panels`` (each ``panel`` inches) and ``legend`` (a figure
    legend, ``figure.legend``, moved to its place here)."""
    width, height = panel
    renderer = cast(FigureCanvasAgg, figure.canvas).get_renderer()
    dpi = figure.dpi
    for axes in panels:
        fit_labels(axes, renderer)
    margins = [_margins(axes, renderer, dpi) for axes in panels]  # inches around each
    lefts, x = [], PAD
    for left, _, right, _ in margins:
        lefts.append(x + left)
        x += left + width + right + GAP
    content_right = x - GAP
    legend_size = _size(legend, renderer, dpi)
    top = max(m[3] for m in margins)
    bottom = max(m[1] for m in margins)
    body = max(top + height + bottom, legend_size[1])
    total_width = content_right + (GAP + legend_size[0] if legend is not None else 0.0) + PAD
    total_height = PAD + body + PAD
    figure.set_size_inches(total_width, total_height)
    body_top = total_height - PAD
    bottom_edge = body_top - top - height
    for axes, left in zip(panels, lefts, strict=True):
        box = (left / total_width, bottom_edge / total_height, width / total_width)
        axes.set_position((*box, height / total_height))
    if legend is not None:
        anchor = ((content_right + GAP) / total_width, body_top / total_height)
        legend.set_bbox_to_anchor(anchor, transform=figure.transFigure)
    for axes in panels:
        declutter(axes.xaxis, renderer)
        declutter(axes.yaxis, renderer)


def arrange_to_width(
    figure: Figure, panels: Sequence[Axes], width: float, aspect: float, legend: Legend | None
) -> None:
    """Size ``figure`` ``width`` inches wide, as printed: ``panels`` side by side (or one
    under another below ``NARROWEST``), ``aspect`` times as high, ``legend`` below."""
    renderer = cast(FigureCanvasAgg, figure.canvas).get_renderer()
    across = _place(figure, panels, width, aspect, legend)
    for axes in panels:
        fit_labels(axes, renderer)
    _place(figure, panels, width, aspect, legend, across)
    for axes in panels:
        declutter(axes.xaxis, renderer)
        declutter(axes.yaxis, renderer)


def _place(
    figure: Figure,
    panels: Sequence[Axes],
    width: float,
    aspect: float,
    legend: Legend | None,
    across: int | None = None,
) -> int:
    """Size ``figure`` and place ``panels`` and ``legend`` for ``arrange_to_width``,
    ``across`` panels a row (``None``: all, or one); return ``across``."""
    renderer = cast(FigureCanvasAgg, figure.canvas).get_renderer()
    left, bottom, right, top = np.max([_margins(a, renderer, figure.dpi) for a in panels], axis=0)
    across = across or len(panels)
    panel = (width - 2 * PAD - (across - 1) * GAP) / across - left - right
    if panel < NARROWEST and across > 1:
        across, panel = 1, width - 2 * PAD - left - right
    if panel < 1.0:
        raise ValueError(f"a width of {width:g} inches leaves {panel:.2f} inches a panel")
    legend_height = _size(legend, renderer, figure.dpi)[1]
    row = top + panel * aspect + bottom
    rows = -(-len(panels) // across)
    below = GAP + legend_height if legend is not None else 0.0
    height = 2 * PAD + rows * row + (rows - 1) * GAP + below
    figure.set_size_inches(width, height)
    for i, axes in enumerate(panels):
        r, c = divmod(i, across)
        x = PAD + c * (left + panel + right + GAP) + left
        y = height - PAD - r * (row + GAP) - top - panel * aspect
        axes.set_position((x / width, y / height, panel / width, panel * aspect / height))
    if legend is not None:
        anchor = (PAD / width, (PAD + legend_height) / height)
        legend.set_bbox_to_anchor(anchor, transform=figure.transFigure)
    return across


def fits(figure: Figure, legend: Legend, width: float) -> bool:
    """Whether ``legend`` is at most ``width`` inches wide (less the canvas' padding)."""
    renderer = cast(FigureCanvasAgg, figure.canvas).get_renderer()
    return _size(legend, renderer, figure.dpi)[0] <= width - 2 * PAD


def _margins(axes: Axes, renderer: RendererBase, dpi: float) -> tuple[float, ...]:
    """The (left, bottom, right, top) inches of what is drawn around ``axes``' area."""
    tight, box = axes.get_tightbbox(renderer), axes.get_window_extent(renderer)
    assert tight is not None  # visible axes always have a box
    around = (box.x0 - tight.x0, box.y0 - tight.y0, tight.x1 - box.x1, tight.y1 - box.y1)
    return tuple(inches / dpi for inches in around)


def fit_labels(axes: Axes, renderer: RendererBase) -> None:
    """Break an axis label longer than its side of the plotting area (a long y label in a
    large font, ``--context poster``) into lines at spaces, as few as fit."""
    box = axes.get_window_extent(renderer)
    for label, side, along in ((axes.xaxis.label, box.width, 0), (axes.yaxis.label, box.height, 1)):
        text = " ".join(label.get_text().split("\n"))
        if " " not in text:
            continue
        for width in range(len(text), 0, -1):
            label.set_text("\n".join(textwrap.wrap(text, width, break_long_words=False)))
            extent = label.get_window_extent(renderer)
            if (extent.width, extent.height)[along] <= side:
                break


def declutter(axis: Axis, renderer: RendererBase) -> None:
    """Blank the tick labels of ``axis`` that would overlap one kept (first and last major
    labels first, then the others, then minor ones)."""
    horizontal = isinstance(axis, XAxis)
    axis.get_tightbbox(renderer)  # places the ticks and sets their labels
    gap = cast(float, renderer.points_to_pixels(TICK_GAP))
    low, high = sorted(axis.get_view_interval())
    shown: list[tuple[bool, float, str, tuple[float, float] | None]] = []  # minor, loc, text
    for minor in (False, True):
        locs = list(axis.get_minorticklocs() if minor else axis.get_majorticklocs())
        ticks = axis.get_minor_ticks(len(locs)) if minor else axis.get_major_ticks(len(locs))
        for loc, tick in zip(locs, ticks, strict=True):
            if not low <= loc <= high:
                continue
            label = tick.label1
            text = label.get_text() if label.get_visible() else ""
            span = None
            if text.strip():
                box = label.get_window_extent(renderer)
                span = (box.x0, box.x1) if horizontal else (box.y0, box.y1)
                span = (float(span[0]), float(span[1]))
            shown.append((minor, float(loc), text, span))
    labelled = [i for i, (_, _, _, span) in enumerate(shown) if span is not None]
    majors = [i for i in labelled if not shown[i][0]]
    order = [*majors[:1], *majors[-1:], *majors[1:-1], *(i for i in labelled if shown[i][0])]
    kept: list[tuple[float, float]] = []
    dropped = set()
    for i in dict.fromkeys(order):
        span = shown[i][3]
        assert span is not None
        if any(span[0] < end + gap and start < span[1] + gap for start, end in kept):
            dropped.add(i)
        else:
            kept.append(span)
    if dropped and not axis.get_offset_text().get_text():  # fixed labels would lose an offset
        for minor in (False, True):
            chosen = [
                (loc, "" if i in dropped else text)
                for i, (m, loc, text, _) in enumerate(shown)
                if m == minor
            ]
            axis.set_ticks([loc for loc, _ in chosen], [text for _, text in chosen], minor=minor)


def _size(artist: Legend | None, renderer: RendererBase, dpi: float) -> tuple[float, float]:
    """Width and height of an artist in inches (zero for none)."""
    if artist is None:
        return 0.0, 0.0
    box = artist.get_window_extent(renderer)
    return box.width / dpi, box.height / dpi
