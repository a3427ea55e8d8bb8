"""The belief strip of one seed (``nslb plot DIR --belief-seed K``): how the belief of each
agent that reports one tracks the true latent state, round by round, and the posterior mass
it puts on the true state.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import MaxNLocator

from nslb_cli.plot.aggregate import METRICS
from nslb_cli.plot.figures import (
    LEGEND_WIDTH,
    NAMES_TITLE,
    PANEL,
    ROUND_LABEL,
    heading,
    panel_labels,
    themed,
    wrap,
)
from nslb_cli.plot.styles import Style

COLUMNS = ("state", "belief", "p_true_state")  # the CSV columns a strip needs
STATE_HEIGHT, MASS_HEIGHT = 1.1, 1.6  # inches: a state panel per agent, the mass panel
LEGEND_ROOM = 2.2  # inches beside the panels for the legend
TRUE_STATE: dict[str, Any] = {"color": "#9E9E9E", "lw": 3.0, "solid_capstyle": "butt"}


def believers(rows: pd.DataFrame) -> list[str]:
    """The agents of ``rows`` (one group's, one seed's) that report a belief: a ``belief``
    and a ``p_true_state`` on some round, in legend order."""
    reports = rows["belief"].notna() & rows["p_true_state"].notna()
    found = set(rows.loc[reports, "agent"].astype(str))
    return [str(agent) for agent in rows["agent"].cat.categories if str(agent) in found]


@themed
def strip(rows: pd.DataFrame, *, seed: int, title: str, styles: Mapping[str, Style]) -> Figure:
    """Per agent of ``believers(rows)`` a panel of the true state and its believed state
    against the round (step lines), then one panel of each one's posterior mass on the
    true state; no title when ``title`` is empty."""
    agents = believers(rows)
    height = STATE_HEIGHT * len(agents) + MASS_HEIGHT + 1.0
    figure = Figure(figsize=(PANEL[0] + LEGEND_ROOM, height), layout="constrained")
    FigureCanvasAgg(figure)
    ratios = [STATE_HEIGHT] * len(agents) + [MASS_HEIGHT]
    panels = list(figure.subplots(len(agents) + 1, 1, sharex=True, height_ratios=ratios))
    entries: dict[str, Any] = {"true state": Line2D([], [], **TRUE_STATE)}
    for axes, agent in zip(panels, agents, strict=False):
        of_agent = rows[rows["agent"] == agent].sort_values("t")
        t = of_agent["t"].to_numpy(np.int64)
        style = styles[agent]
        axes.step(t, of_agent["state"].to_numpy(float), where="post", **TRUE_STATE)
        line = axes.step(
            t, of_agent["belief"].to_numpy(float), where="post", color=style.color, lw=1.0
        )[0]
        entries[wrap(f"{agent}: believed state", LEGEND_WIDTH)] = line
        axes.yaxis.set_major_locator(MaxNLocator(integer=True))
        axes.set_ylabel("state")
        axes.grid(False, axis="x")
    mass = panels[-1]
    for agent in agents:
        of_agent = rows[rows["agent"] == agent].sort_values("t")
        style = styles[agent]
        mass.plot(
            of_agent["t"].to_numpy(np.int64),
            of_agent["p_true_state"].to_numpy(float),
            color=style.color,
            lw=1.0,
        )
    mass.set(xlabel=ROUND_LABEL, ylabel=wrap(METRICS["p_true_state"].label, 18), ylim=(-0.03, 1.03))
    panel_labels(panels)
    if title:
        panels[0].set_title(heading(f"{title}: seed {seed}, true and believed state", ""))
    figure.legend(
        list(entries.values()), list(entries), loc="outside right upper", frameon=False,
        title=NAMES_TITLE, alignment="left",
    )  # fmt: skip
    return figure
