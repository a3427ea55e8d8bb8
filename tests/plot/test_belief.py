"""``nslb plot DIR --belief-seed K``: how each agent's belief tracks the true state on seed K."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from nslb_cli.cli import main
from tests.helpers.plotting import drawn
from tests.helpers.results_tree import write_run


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """mTS (which reports a belief) and Random (which does not), seeds 0 and 1."""
    root = tmp_path_factory.mktemp("belief")
    write_run(root / "e/mts", "mts", [0, 1], name="e")
    write_run(root / "e/random", "random", [0, 1], name="e")
    return root


def test_a_belief_strip_is_drawn_for_the_agents_that_report_a_belief(
    results: Path, tmp_path: Path, capsys, monkeypatch
) -> None:
    quick = ("--metric", "cum_regret", "--dpi", "30", "--reference", "none")
    found = drawn(monkeypatch, results, "--out", tmp_path, "--belief-seed", "1", *quick)
    capsys.readouterr()
    assert (tmp_path / "e-belief-seed=1.png").is_file()
    strip = found["e-belief-seed=1"]
    assert [axes.get_title(loc="left") for axes in strip.axes] == ["(a)", "(b)"]
    (legend,) = strip.legends
    assert [t.get_text() for t in legend.get_texts()] == ["true state", "mTS: believed state"]
    state, mass = strip.axes
    assert " ".join(mass.get_ylabel().split()) == "posterior mass on the true state"
    assert all(np.isin(np.asarray(line.get_ydata()), range(5)).all() for line in state.lines)


def test_a_seed_without_results_is_refused_in_one_line(
    results: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["plot", str(results), "--out", str(tmp_path), "--belief-seed", "7"])
    (line,) = capsys.readouterr().err.splitlines()
    assert stopped.value.code == 2
    assert line == "nslb: error: --belief-seed 7: no results of seed 7 (seeds: 0–1)"
    assert not list(tmp_path.iterdir()), "refused before anything is written"
