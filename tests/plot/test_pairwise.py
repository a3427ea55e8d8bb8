"""The pairwise comparison of ``nslb plot --paper`` (Trella et al., 2025): win rates on
paired seeds."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from nslb_cli.plot.pairwise import heatmap, win_rates
from tests.helpers.cli import nslb


def _final(regrets: dict[str, list[float]]) -> pd.DataFrame:
    rows = [
        {"agent": agent, "seed": seed, "cum_regret": value}
        for agent, values in regrets.items()
        for seed, value in enumerate(values)
        if not np.isnan(value)
    ]
    frame = pd.DataFrame(rows)
    return frame.assign(agent=pd.Categorical(frame["agent"], categories=list(regrets)))


def test_win_rates_count_paired_seeds_with_less_regret_and_no_ties() -> None:
    final = _final({"a": [1.0, 5.0, 2.0, 3.0], "b": [2.0, 4.0, 2.0, np.nan], "c": [9.0] * 4})
    wins = win_rates(final, "cum_regret")
    assert wins.loc["a", "b"] == 1 / 3 and wins.loc["b", "a"] == 1 / 3  # one tie, seed 3 unpaired
    assert wins.loc["a", "c"] == 1.0 and wins.loc["c", "a"] == 0.0
    assert np.isnan(wins.loc["a", "a"])
    assert wins.loc["a", "average"] == (1 / 3 + 1.0) / 2


def test_the_heatmap_draws_every_share() -> None:
    figure = heatmap(_final({"a": [1.0, 2.0], "b": [2.0, 1.0]}), value="cum_regret", title="")
    texts = [t.get_text() for t in figure.axes[0].texts]
    assert texts == ["0.50", "0.50", "0.50", "0.50"]


def test_the_latent_ar_preset_gets_its_pairwise_figure_in_paper_mode(tmp_path: Path) -> None:
    """``experiment=family/latent_ar`` then ``nslb plot --paper``: one pairwise heatmap per
    AR order, with its caption (other presets' groups get none: tests/plot/test_figures.py)."""
    run = nslb("run", "experiment=family/latent_ar", "agent=larl,kalman_oracle",
               "run.n_seeds=3", "env.horizon=15", cwd=tmp_path)  # fmt: skip
    assert run.returncode == 0, run.stderr
    plot = nslb("plot", "outputs/family/latent_ar", "--out", "figs", "--paper", cwd=tmp_path)
    assert plot.returncode == 0, plot.stderr
    heatmaps = sorted((tmp_path / "figs").glob("*pairwise.png"))
    assert len(heatmaps) == 3
    captions = sorted((tmp_path / "figs").glob("*pairwise.caption.txt"))
    assert "share of the seeds (paired)" in captions[0].read_text()
