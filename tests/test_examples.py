"""examples/notebook.py, the notebook of docs/guide/results-in-python.md, runs as written."""

from __future__ import annotations

import runpy
from pathlib import Path

import matplotlib.colors as mcolors
import pytest

import nslb_cli

NOTEBOOK = Path(__file__).parents[1] / "examples" / "notebook.py"


def test_the_notebook_runs_loads_and_draws_in_nslbs_colours(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    cells = runpy.run_path(str(NOTEBOOK), run_name="__main__")
    table = cells["table"]
    assert sorted(table["agent"]) == ["CD-TS", "mTS"]
    assert table["n_seeds"].tolist() == [5, 5]
    assert (tmp_path / "outputs" / "example" / "cum_regret.png").stat().st_size > 10_000
    colours = nslb_cli.palette(["CD-TS", "mTS"])
    drawn = {line.get_label(): line.get_color() for line in cells["axes"].get_lines()}
    for agent, colour in colours.items():
        assert mcolors.same_color(drawn[agent], colour)
