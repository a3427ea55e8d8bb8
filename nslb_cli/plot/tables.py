"""Summary tables as text: markdown for reading, CSV (full precision) for further analysis.

The input is :func:`nslb_cli.plot.aggregate.summary`'s table; nothing here computes statistics.
A mean ± SE is printed with the SE to two significant digits and the mean to the same
decimal place (``92.6 ± 2.6``, ``0.612 ± 0.010``).
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from nslb_cli.plot.aggregate import METRICS, PAIRED_METRIC, SUMMARY_METRICS
from nslb_cli.store.atomic import atomic_write_text

MAX_DECIMALS = 6


def format_pm(mean: float, se: float, signed: bool = False) -> str:
    """``mean ± se`` rounded to the SE's second significant digit; the mean alone without SE."""
    sign = "+" if signed else ""
    if math.isnan(mean):
        return "–"
    if math.isnan(se):
        return f"{mean:{sign}.4g}"
    decimals = 3 if se == 0 else min(max(1 - math.floor(math.log10(se)), 0), MAX_DECIMALS)
    return f"{mean:{sign}.{decimals}f} ± {se:.{decimals}f}"


def markdown(table: pd.DataFrame, *, title: str, details: str = "") -> str:
    """One group's summary (rows of :func:`~nslb_cli.plot.aggregate.summary`) as markdown."""
    reference = next((r for r in table["reference"] if r), "")
    paired = METRICS[PAIRED_METRIC].label
    header = [
        "agent",
        "seeds",
        *(f"final {METRICS[name].label}" for name in SUMMARY_METRICS),
        f"Δ {paired} vs {reference} (paired)" if reference else f"Δ {paired} (paired)",
        "paired seeds",
    ]
    lines = [f"### {title}", ""]
    if details:
        lines += [details, ""]
    lines += [
        "| " + " | ".join(header) + " |",
        "|" + "|".join(["---", *["---:"] * (len(header) - 1)]) + "|",
    ]
    for row in table.itertuples(index=False):
        values = row._asdict()
        cells = [str(row.agent), str(row.n_seeds)]
        cells += [format_pm(values[f"{n}_mean"], values[f"{n}_se"]) for n in SUMMARY_METRICS]
        diff_mean = values[f"diff_{PAIRED_METRIC}_mean"]
        if not reference:
            cells += ["no reference agent", ""]
        elif row.agent == reference:
            cells += ["(reference)", ""]
        else:
            diff_se = values[f"diff_{PAIRED_METRIC}_se"]
            n_pairs = values["n_pairs"]
            cells += [
                format_pm(diff_mean, diff_se, signed=True),
                "0" if pd.isna(n_pairs) else str(n_pairs),
            ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def write(table: pd.DataFrame, text: str, stem: Path) -> list[Path]:
    """Write ``stem.md`` (``text``) and ``stem.csv`` (``table``, full precision)."""
    paths = [stem.parent / f"{stem.name}.md", stem.parent / f"{stem.name}.csv"]
    atomic_write_text(paths[0], text)
    atomic_write_text(paths[1], table.to_csv(index=False))
    return paths
