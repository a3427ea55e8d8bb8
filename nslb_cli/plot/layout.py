"""Figures whose plotting areas keep their size: the figure grows around them.

:func:`new_figure` makes a figure with panels (axes) of a fixed size in inches. Once
everything is drawn, :func:`arrange` measures what surrounds each panel (tick labels, axis
labels, title), the legend and the figure's title, then sets the figure's size and every
position: panels side by side, the legend on their right (top-aligned), the title above,
nothing outside the canvas. However many agents the legend lists, the panels stay as large
as they were asked to be; the figure gets wider or taller instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from matplotlib.axes import Axes
from matplotlib.backend_bases import RendererBase
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.legend import Legend
from matplotlib.text import Text

PAD = 0.1  # inches between the canvas edge and anything on it
GAP = 0.25  # inches between neighbours: panels, the legend, the title


def new_figure(n_panels: int, panel: tuple[float, float]) -> tuple[Figure, list[Axes]]:
    """A figure with ``n_panels`` axes of ``panel`` (width, height) inches each."""
    width, height = panel
    figure = Figure(figsize=(n_panels * (width + 4) + 6, height + 4))
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
    title: Text | None = None,
) -> None:
    """Size ``figure`` around ``panels`` (each ``panel`` inches), ``legend`` and ``title``.

    ``legend`` must be a figure legend (``figure.legend``) and ``title`` a figure text; both
    are moved to their place here.
    """
    width, height = panel
    renderer = cast(FigureCanvasAgg, figure.canvas).get_renderer()
    dpi = figure.dpi
    margins = []  # (left, bottom, right, top) decorations of each panel, inches
    for axes in panels:
        tight, box = axes.get_tightbbox(renderer), axes.get_window_extent(renderer)
        assert tight is not None  # visible axes always have a box
        margins.append(
            (
                (box.x0 - tight.x0) / dpi,
                (box.y0 - tight.y0) / dpi,
                (tight.x1 - box.x1) / dpi,
                (tight.y1 - box.y1) / dpi,
            )
        )
    lefts, x = [], PAD
    for left, _, right, _ in margins:
        lefts.append(x + left)
        x += left + width + right + GAP
    content_right = x - GAP
    legend_size = _size(legend, renderer, dpi)
    title_size = _size(title, renderer, dpi)
    top = max(m[3] for m in margins)
    bottom = max(m[1] for m in margins)
    title_height = title_size[1] + GAP / 2 if title is not None else 0.0
    body = max(top + height + bottom, legend_size[1])
    total_width = content_right + (GAP + legend_size[0] if legend is not None else 0.0) + PAD
    total_width = max(total_width, title_size[0] + 2 * PAD)
    total_height = PAD + title_height + body + PAD
    figure.set_size_inches(total_width, total_height)
    body_top = total_height - PAD - title_height
    for axes, left in zip(panels, lefts, strict=True):
        bottom_edge = body_top - top - height
        axes.set_position(
            (
                left / total_width,
                bottom_edge / total_height,
                width / total_width,
                height / total_height,
            )
        )
    if legend is not None:
        anchor = ((content_right + GAP) / total_width, body_top / total_height)
        legend.set_bbox_to_anchor(anchor, transform=figure.transFigure)
    if title is not None:
        title.set_position((PAD / total_width, (total_height - PAD) / total_height))


def _size(artist: Legend | Text | None, renderer: RendererBase, dpi: float) -> tuple[float, float]:
    """Width and height of an artist in inches (zero for none)."""
    if artist is None:
        return 0.0, 0.0
    box = artist.get_window_extent(renderer)
    return box.width / dpi, box.height / dpi
