"""Hyperparameter studies, from trial files written by hand: figures and the trials table."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from nslb_cli.cli import main
from nslb_cli.plot import study
from tests.helpers.plotting import drawn
from tests.plot import hand

TRIALS = [  # number, tau (log-spaced), resampling, gamma (within a decade), objective
    (0, 10, "systematic", 0.1, 250.0),
    (1, 400, "multinomial", 0.2, 180.5),
    (2, 50, "systematic", 0.3, None),  # failed
    (3, 1000, "stratified", 0.15, 175.25),
    (4, 200, "systematic", 0.25, 190.0),
    (5, 800, "multinomial", 0.12, 175.25),  # ties trial 3: the earlier is best
]


@pytest.fixture
def searched(tmp_path: Path) -> Path:
    """A study folder: six trials and the run folder of one of them."""
    root = tmp_path / "search"
    for number, tau, resampling, gamma, objective in TRIALS:
        params = {"agent.tau": tau, "agent.resampling": resampling, "agent.gamma": gamma}
        hand.write_trial(root, number, params, objective)
    run_config = hand.config("search", "cd_ucb", tau=1000, threshold=None, gamma=0.15)
    hand.write_run(root / "synthetic/cd_ucb/tau=1000", run_config, {0: (3.5, 2.0), 1: (4.0, 2.5)})
    return root


def test_study_figures_and_table(searched: Path, tmp_path: Path, capsys, monkeypatch) -> None:
    found = drawn(monkeypatch, searched, "--out", tmp_path)
    out = capsys.readouterr().out
    assert {
        "study-objective",
        "study-param-agent.tau",
        "study-param-agent.resampling",
        "study-param-agent.gamma",
    } <= set(found)
    assert not (tmp_path / "summary.csv").exists(), "a study's trials: its study figures only"
    table = pd.read_csv(tmp_path / "study.csv")
    assert list(table.columns) == [
        "rank",
        "trial",
        "objective",
        "agent.tau",
        "agent.resampling",
        "agent.gamma",
        "overrides",
    ]
    assert list(table["trial"]) == [3, 5, 1, 4, 0, 2], "best first (minimize), ties by trial"
    assert list(table["rank"].iloc[:5]) == [1, 2, 3, 4, 5] and pd.isna(table["rank"].iloc[5])
    assert (
        table["overrides"].iloc[0] == "agent.tau=1000 agent.resampling=stratified agent.gamma=0.15"
    )
    text = (tmp_path / "study.md").read_text()
    assert text in out
    assert (
        "objective: final cum_regret (minimize); 6 trials (1 failed); best: trial 3, 175.25 "
        in text
    )
    assert "| 1 | 3 | 175.25 | 1000 | stratified | 0.15 |" in text
    assert "|  | 2 | failed | 50 | systematic | 0.3 |" in text


def test_study_figures_show_the_search(searched: Path, tmp_path: Path, capsys, monkeypatch):
    found = drawn(monkeypatch, searched, "--out", tmp_path)
    capsys.readouterr()
    history = found["study-objective"].axes[0]
    (step,) = [line for line in history.lines if len(line.get_xdata()) == 5]
    assert list(step.get_ydata()) == [250.0, 180.5, 175.25, 175.25, 175.25], "best so far"
    assert history.get_xlabel() == "trial"
    assert history.get_ylabel() == "final cum_regret (lower is better)"
    assert found["study-param-agent.tau"].axes[0].get_xscale() == "log", "10 … 1000"
    assert found["study-param-agent.gamma"].axes[0].get_xscale() == "linear", "0.1 … 0.3"
    words = [t.get_text() for t in found["study-param-agent.resampling"].axes[0].get_xticklabels()]
    assert words == ["multinomial", "stratified", "systematic"]
    legend = [t.get_text() for t in found["study-param-agent.tau"].legends[0].get_texts()]
    assert legend == ["best: trial 3"], "the trials' shades are read on a colour bar"
    (bar,) = found["study-param-agent.tau"].axes[0].child_axes
    assert bar.get_ylabel() == "trial"
    assert [int(t) for t in bar.get_yticks() if -0.5 <= t <= 4.5] == [0, 1, 2, 3, 4], "each"


def test_a_study_alone_is_plotted_and_bad_trials_are_one_line_each(tmp_path: Path, capsys):
    root = tmp_path / "search"
    for number, tau, _, _, objective in TRIALS[:3]:
        hand.write_trial(root, number, {"agent.tau": tau}, objective)
    (root / ".nslb-study/9.json").write_text("{not json")
    hand.write_trial(root, 10, {"agent.tau": 5}, 1.0, direction="maximize")
    main(["plot", str(root), "--out", str(tmp_path / "figs"), "--format", "png", "--paper"])
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 2 and all(line.startswith("nslb plot: skipped ") for line in lines)
    assert any("9.json: unreadable trial record" in line for line in lines)
    assert any(
        "10.json: trial 10 has objective final cum_regret (maximize)" in line for line in lines
    )
    names = {p.name for p in (tmp_path / "figs").iterdir()}
    assert {"study.md", "study.csv", "study-objective.png", "study-param-agent.tau.png"} <= names
    assert "study-objective.caption.txt" in names, "publication mode: captions"
    assert "wrote 2 figure files" in captured.out


def test_a_study_folder_gets_its_study_figures_only_and_other_results_theirs(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    """Twenty trials would draw twenty near-identical curves; results beside the study, in the
    same folder, are plotted as ever."""
    root = tmp_path / "results"
    hand.write_trial(root / "search", 0, {"agent.tau": 10}, 3.5)
    trial = hand.config("search", "cd_ucb", tau=10, threshold=None, gamma=0.0)
    hand.write_run(root / "search/synthetic/cd_ucb/tau=10", trial, {0: (3.5, 2.0)})
    hand.write_run(root / "eval/mts", hand.config("eval", "mts"), {0: (2.0, 3.0)})
    found = drawn(monkeypatch, root, "--out", tmp_path / "f", "--metric", "cum_regret")
    capsys.readouterr()
    assert set(found) == {
        "search-study-objective",
        "search-study-param-agent.tau",
        "eval-cum_regret",
        "eval-final_cum_regret",
    }
    assert pd.read_csv(tmp_path / "f/summary.csv")["group"].tolist() == ["eval"]


def test_a_study_behind_a_symbolic_link_is_found(tmp_path: Path) -> None:
    """As run folders are: a sweep folder linked into the results is followed."""
    hand.write_trial(tmp_path / "kept/search", 0, {"x": 1}, 0.5)
    (tmp_path / "results").mkdir()
    (tmp_path / "results/search").symlink_to(tmp_path / "kept/search", target_is_directory=True)
    found, skipped = study.find(tmp_path / "results")
    assert [one.folder for one in found] == [Path("search")] and skipped == []


def test_best_and_table_follow_the_direction(tmp_path: Path) -> None:
    for number, objective in enumerate((0.5, 0.8, 0.7)):
        hand.write_trial(tmp_path, number, {"x": number}, objective, direction="maximize")
    found, skipped = study.find(tmp_path)
    (one,) = found
    assert skipped == [] and one.folder == Path(".")
    best = study.best(one)
    assert best is not None and best.number == 1
    assert list(study.table(one)["objective"]) == [0.8, 0.7, 0.5]
    assert np.isclose(study.table(one)["x"].iloc[0], 1)


def test_a_study_none_of_whose_trials_finished_is_one_line_naming_them(tmp_path: Path) -> None:
    """Nothing to draw: no empty figure, and the line says which values were tried."""
    for number, tau in enumerate((3, 5, 7, 9)):
        hand.write_trial(tmp_path / "search", number, {"agent.tau": tau}, None)
    found, skipped = study.find(tmp_path)
    assert found == []
    (line,) = [str(item) for item in skipped]
    assert line.endswith(
        "none of its 4 trials finished (trial 0: agent.tau=3; trial 1: agent.tau=5; "
        "trial 2: agent.tau=7; …)"
    )
