"""Pairwise comparison of a group's agents, as Trella et al. (RLC 2025) draw it: the share of
paired seeds on which the row's agent ends with less regret than the column's (a tie counts
for neither, so ``W[i, j] + W[j, i] <= 1``), and its average over the other agents.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from nslb_cli.plot.figures import themed
from nslb_cli.plot.layout import SMALLEST_PANEL, arrange, new_figure


def win_rates(final: pd.DataFrame, value: str) -> pd.DataFrame:
    """``W[i, j]``: the share of common seeds where agent ``i``'s ``value`` is below agent
    ``j``'s (NaN on the diagonal), and a last column ``average``: the row's mean."""
    table = final.pivot_table(index="seed", columns="agent", values=value, observed=True)
    agents = [str(a) for a in table.columns]
    values = table.to_numpy()
    wins = np.full((len(agents), len(agents)), np.nan)
    for i in range(len(agents)):
        for j in range(len(agents)):
            both = ~np.isnan(values[:, i]) & ~np.isnan(values[:, j])
            if i != j and both.any():
                wins[i, j] = float(np.mean(values[both, i] < values[both, j]))
    result = pd.DataFrame(wins, index=agents, columns=agents)
    with np.errstate(invalid="ignore"):
        others = np.where(np.isnan(wins), 0.0, wins).sum(axis=1)
        result["average"] = others / (~np.isnan(wins)).sum(axis=1)
    return result


@themed
def heatmap(final: pd.DataFrame, *, value: str, title: str) -> Figure:
    """The win rates of ``win_rates`` as an annotated heatmap (rows: the agent that
    wins), the average in the last column; no title when ``title`` is empty."""
    wins = win_rates(final, value)
    n = len(wins)
    panel = (max(SMALLEST_PANEL[0], 0.75 * (n + 1)), max(SMALLEST_PANEL[1], 0.45 * n))
    figure, (axes,) = new_figure(1, panel)
    axes.imshow(wins.to_numpy(float), cmap="coolwarm", vmin=0.0, vmax=1.0)
    for (i, j), share in np.ndenumerate(wins.to_numpy(float)):
        if not np.isnan(share):
            axes.text(j, i, f"{share:.2f}", ha="center", va="center", fontsize="small")
    axes.set_xticks(range(n + 1), [*wins.index, "average"], rotation=45, ha="right")
    axes.set_yticks(range(n), list(wins.index))
    axes.set(xlabel="compared with", ylabel="share of seeds with less regret")
    axes.grid(False)
    if title:
        axes.set_title(title)
    arrange(figure, [axes], panel)
    return figure
