"""The summary tables ``nslb plot`` writes as Markdown, CSV and LaTeX, and their compute-cost
column, on run folders written by hand."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from nslb_cli.cli import main
from nslb_cli.plot import latex, tables
from nslb_cli.plot.notebook import load_results, summarise
from tests.plot import hand

COST = "seconds_per_1k_seed_rounds"


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Group ``e``: mTS, umTS and Random, 3 seeds of 4 rounds; umTS and Random tie on regret,
    umTS has the best reward; only mTS recorded its time: 3 s for seeds 0 and 1 simulated
    together, 0.5 s for seed 2."""
    root = tmp_path_factory.mktemp("results")
    tied = {0: (8.0, 2.5), 1: (9.5, 2.75), 2: (7.0, 3.0)}
    mts = hand.write_run(
        root / "e/mts", hand.config("e", "mts"), {0: (10.5, 2.25), 1: (12.0, 2.5), 2: (9.25, 2.0)}
    )
    batches = [{"seeds": [0, 1], "seconds": 3.0}, {"seeds": [2], "seconds": 0.5}]
    (mts / "provenance.jsonl").write_text("".join(json.dumps(b) + "\n" for b in batches))
    hand.write_run(root / "e/umts", hand.config("e", "umts"), tied)
    random = {seed: (regret, 1.0) for seed, (regret, _) in tied.items()}
    hand.write_run(root / "e/random", hand.config("e", "random"), random)
    return root


@pytest.fixture(scope="module")
def summary(results: Path) -> pd.DataFrame:
    """The summary table of ``results``, indexed by agent."""
    return summarise(load_results(results)).set_index("agent", drop=False)


@pytest.fixture(scope="module")
def texts(summary: pd.DataFrame, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The summary of ``results`` as ``e.md`` and ``e.tex``."""
    folder = tmp_path_factory.mktemp("tables")
    (folder / "e.md").write_text(tables.markdown(summary, title="e"))
    (folder / "e.tex").write_text(tables.latex(summary))
    return folder


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``nslb plot`` of two groups, ``e`` and ``f``, of one mTS seed of 4 rounds each; ``e``'s
    took 0.002 s to simulate."""
    root = tmp_path_factory.mktemp("groups")
    for group in ("e", "f"):
        hand.write_run(root / f"{group}/mts", hand.config(group, "mts"), {0: (3.0, 2.0)})
    (root / "e/mts/provenance.jsonl").write_text('{"seeds": [0], "seconds": 0.002}\n')
    out = tmp_path_factory.mktemp("report")
    main(["plot", str(root), "--out", str(out), "--format", "png", "--dpi", "20",
          "--metric", "cum_regret"])  # fmt: skip
    return out


def _markdown_rows(path: Path) -> dict[str, list[str]]:
    """The cells of each row of a Markdown summary, by agent (the header's: ``agent``)."""
    rows = [line.strip("|").split(" | ") for line in path.read_text().splitlines()]
    cells = [[cell.strip() for cell in row] for row in rows if len(row) > 2]
    return {row[0]: row for row in cells if not row[0].startswith("---")}


def _latex_rows(path: Path) -> dict[str, list[str]]:
    """The cells of each agent's row of a LaTeX summary (below ``\\midrule``), by agent."""
    body = path.read_text().split("\\midrule\n")[1].split("\\bottomrule")[0]
    rows = [line.removesuffix(" \\\\").split(" & ") for line in body.splitlines()]
    return {row[0]: row for row in rows}


def _numbers(cell: str) -> list[str]:
    """The numbers a cell shows, as written (signs aside: ``-`` in Markdown, ``$-$`` in LaTeX)."""
    return re.findall(r"\d+(?:\.\d+)?", cell)


def test_the_cost_column_is_computed_from_the_recorded_seconds(
    summary: pd.DataFrame, texts: Path
) -> None:
    # 3.5 s over 3 seeds of 4 rounds: 1000 * 3.5 / 12 s per 1,000 seed-rounds
    assert summary.loc["mTS", COST] == pytest.approx(1000 * 3.5 / 12, rel=1e-9)
    markdown = _markdown_rows(texts / "e.md")
    assert markdown["mTS"][markdown["agent"].index("s / 1k seed-rounds")] == "292"


def test_a_run_without_recorded_seconds_shows_a_dash(summary: pd.DataFrame, texts: Path) -> None:
    assert summary[COST].isna().tolist() == [False, True, True]
    markdown = _markdown_rows(texts / "e.md")
    column = markdown["agent"].index("s / 1k seed-rounds")
    assert markdown["umTS"][column] == "–" and markdown["Random"][column] == "–"


def test_latex_bolds_each_column_s_best_value_ties_included(texts: Path) -> None:
    bold = {
        agent: [j for j, cell in enumerate(cells) if cell.startswith("\\textbf")]
        for agent, cells in _latex_rows(texts / "e.tex").items()
    }
    # regret (mean, IQM) and Δ: umTS and Random tie at 8.17; reward (mean, IQM): umTS
    assert bold == {"mTS": [], "umTS": [2, 3, 4, 5, 6], "Random": [2, 3, 6]}


def test_latex_shows_the_markdown_s_cells_between_booktabs_rules(texts: Path) -> None:
    text = (texts / "e.tex").read_text()
    assert [text.count(rule) for rule in ("\\toprule", "\\midrule", "\\bottomrule")] == [1] * 3
    markdown = _markdown_rows(texts / "e.md")
    latex = _latex_rows(texts / "e.tex")
    assert latex.keys() == markdown.keys() - {"agent"}
    for agent, cells in latex.items():
        assert [_numbers(c) for c in cells] == [_numbers(c) for c in markdown[agent]], agent
    # umTS - mTS per seed: -2.5, -2.5, -2.25: mean -2.417, SE 0.083
    assert "\\textbf{\\boldmath{}$-$2.417 $\\pm$ 0.083}" in latex["umTS"]


def test_plot_writes_each_group_s_tabular_and_all_under_their_names(report: Path) -> None:
    text = (report / "summary.tex").read_text()
    for group in ("e", "f"):
        assert f"% {group}\n{(report / f'{group}-summary.tex').read_text()}" in text
    assert "\\textbf" not in text, "one agent: no best"


def test_plot_s_summary_has_the_cost_column_not_a_statistic_of_it(report: Path) -> None:
    summary = pd.read_csv(report / "summary.csv").set_index("group")
    assert summary.loc["e", COST] == pytest.approx(1000 * 0.002 / 4) and pd.isna(
        summary.loc["f", COST]
    )
    assert not [column for column in summary.columns if column.startswith(f"{COST}_")]
    markdown = _markdown_rows(report / "e-summary.md")
    assert markdown["mTS"][markdown["agent"].index("s / 1k seed-rounds")] == "0.500"


@pytest.mark.skipif(shutil.which("pdflatex") is None, reason="no pdflatex")
def test_summary_tex_compiles_in_a_document_with_booktabs(report: Path, tmp_path: Path) -> None:
    document = tmp_path / "paper.tex"
    document.write_text(
        "\\documentclass{article}\\usepackage{booktabs}\\begin{document}"
        f"\\input{{{report / 'summary.tex'}}}\\end{{document}}\n"
    )
    compiled = subprocess.run(
        ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", document.name],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert compiled.returncode == 0, compiled.stdout[-2000:]


def test_latex_prints_comparison_signs_and_bars_as_themselves() -> None:
    """Under LaTeX's default font encoding a bare ``<`` prints as ``¡``: p-values read
    ``< 0.0001``."""
    assert latex.escape("p < 0.0001 | a > b") == (
        r"p \textless{} 0.0001 \textbar{} a \textgreater{} b"
    )


def test_cells_that_print_the_same_tie_for_bold() -> None:
    """92.61 and 92.64 both print 92.6: a reader sees a tie, so both are bold."""
    rows = [["a", "92.6 ± 1.2"], ["b", "92.6 ± 2.6"], ["c", "–"], ["d", "(reference)"]]
    assert tables._best_cells(rows, {1: min}) == {(0, 1), (1, 1)}
