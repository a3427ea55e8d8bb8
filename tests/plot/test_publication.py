"""Publication mode and the look of figures, judged on the matplotlib Figures before they are
saved: no titles, captions beside them, Figure 3's shared axis, a style file honoured whole,
ordered sweeps in one hue, tick labels that never collide."""

from __future__ import annotations

import colorsys
import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.axes import Axes
from matplotlib.axis import Axis
from matplotlib.colors import to_rgb
from matplotlib.figure import Figure

from nslb_cli.cli import main
from nslb_cli.plot import figures, paper
from nslb_cli.plot.figures import sweep
from nslb_cli.plot.styles import own_style, ramp, style_map
from tests.helpers.plotting import drawn
from tests.helpers.results_tree import SMALL, write_run
from tests.plot import hand

TAUS = (10, 20, 50, 100, 200, 400, 800, 1000)


@pytest.fixture(scope="module")
def tau_sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """CD-UCB at eight values of tau, mTS and Random: 3 seeds, 4 rounds."""
    root = tmp_path_factory.mktemp("results")
    for i, tau in enumerate(TAUS):
        finals = {seed: (20.0 - i + seed, 1.5 + 0.25 * seed) for seed in range(3)}
        run_config = hand.config("sweep", "cd_ucb", tau=tau, threshold=None, gamma=0.0)
        hand.write_run(root / f"cd_ucb/tau={tau}", run_config, finals)
    hand.write_run(root / "mts", hand.config("sweep", "mts"), {s: (5.0 + s, 3.0) for s in range(3)})
    random = hand.config("sweep", "random")
    hand.write_run(root / "random", random, {s: (30.0 + s, 1.0) for s in range(3)})
    return root


def tick_label_boxes(axis: Axis, renderer: object) -> list:
    """The boxes of the tick labels drawn on ``axis`` (inside its view, with text)."""
    low, high = sorted(axis.get_view_interval())
    boxes = []
    for ticks, locs in (
        (axis.get_major_ticks(), axis.get_majorticklocs()),
        (axis.get_minor_ticks(), axis.get_minorticklocs()),
    ):
        for tick, loc in zip(ticks, locs, strict=False):
            label = tick.label1
            if low <= loc <= high and label.get_visible() and label.get_text().strip():
                boxes.append(label.get_window_extent(renderer))
    return boxes


def assert_no_overlapping_tick_labels(figure: Figure) -> None:
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    for axes in figure.axes:
        for axis, horizontal in ((axes.xaxis, True), (axes.yaxis, False)):
            spans = sorted(
                (box.x0, box.x1) if horizontal else (box.y0, box.y1)
                for box in tick_label_boxes(axis, renderer)
            )
            for (_, end), (start, _) in zip(spans, spans[1:], strict=False):
                assert start >= end, f"tick labels overlap on {axis.axis_name}: {spans}"


def test_publication_figures_have_no_titles_and_their_captions_beside_them(
    tau_sweep: Path, tmp_path: Path, capsys, monkeypatch
) -> None:
    found = drawn(monkeypatch, tau_sweep, "--out", tmp_path, "--publication")
    capsys.readouterr()
    assert {"sweep-cum_regret", "sweep-avg_reward", "sweep-final_cum_regret"} <= set(found)
    for stem, figure in found.items():
        assert figure.get_suptitle() == "" and not figure.texts, stem
        assert all(
            axes.get_title(loc) == "" for axes in figure.axes for loc in ("left", "center", "right")
        ), stem
        caption = (tmp_path / f"{stem}.caption.txt").read_text()
        assert caption.startswith("sweep: ") and caption.endswith(".\n"), stem
    titled = drawn(monkeypatch, tau_sweep, "--out", tmp_path / "plain")
    capsys.readouterr()
    assert titled["sweep-cum_regret"].axes[0].get_title().startswith("sweep: mean ± SE")
    assert not list((tmp_path / "plain").glob("*.caption.txt")), "captions: publication mode"


def test_figure_3_panels_share_their_y_axis_and_tick_format() -> None:
    agents = ["mTS", "CD-UCB"]
    styles = style_map(agents, {"mTS": "mts", "CD-UCB": "cd_ucb"})

    def stats(low: float, high: float) -> pd.DataFrame:
        t = np.arange(1, 101)
        table = pd.concat(
            pd.DataFrame({"agent": a, "t": t, "mean": np.linspace(low, high, 100) + i * 0.05,
                          "se": 0.01, "n": 10})
            for i, a in enumerate(agents)
        )  # fmt: skip
        return table.assign(agent=pd.Categorical(table["agent"], categories=agents))

    figure = paper.draw(paper.FIGURES[1], [stats(0.45, 0.8), stats(0.4, 0.85)], styles)
    figure.canvas.draw()
    left, right = figure.axes
    assert left.get_ylim() == right.get_ylim()
    texts = [[t.get_text() for t in axes.get_yticklabels()] for axes in (left, right)]
    assert texts[0] == texts[1] and all(texts[0])
    assert left.get_ylabel() and not right.get_ylabel(), "the shared axis is labelled once"
    assert left.get_ylim()[0] <= 0.4 and left.get_ylim()[1] >= 0.9


def test_average_reward_curves_skip_the_first_rounds(tmp_path: Path, capsys, monkeypatch) -> None:
    env = {**hand.SYNTHETIC, "horizon": 300}
    for agent, jump in (("oracle", 5.0), ("mts", 0.1)):
        folder = hand.write_run(tmp_path / agent, hand.config("e", agent, env), {0: (1.0, 150.0)})
        lines = (folder / "seed=0.csv").read_text().splitlines()
        fields = lines[1].split(",")
        fields[7] = str(jump)  # cum_reward at round 1: a jump of the running mean
        (folder / "seed=0.csv").write_text(
            "\n".join([lines[0], ",".join(fields), *lines[2:]]) + "\n"
        )
    found = drawn(monkeypatch, tmp_path, "--out", tmp_path / "figs")
    capsys.readouterr()
    axes = found["e-avg_reward"].axes[0]
    assert axes.get_ylim()[1] < 1.0, "round 1's 5.0 is not drawn"
    assert min(line.get_xdata().min() for line in axes.lines if len(line.get_xdata())) == 3
    found = drawn(monkeypatch, tmp_path, "--out", tmp_path / "all", "--rounds", "1:")
    capsys.readouterr()
    assert found["e-avg_reward"].axes[0].get_ylim()[1] > 4.0, "--rounds START draws them all"


def test_a_style_file_is_honoured_whole(tau_sweep: Path, tmp_path: Path, capsys, monkeypatch):
    style = tmp_path / "big.mplstyle"
    style.write_text("font.size: 15\nfont.family: serif\naxes.edgecolor: red\n")
    found = drawn(monkeypatch, tau_sweep, "--out", tmp_path / "a", "--style", style)
    capsys.readouterr()
    axes = found["sweep-cum_regret"].axes[0]
    assert axes.xaxis.label.get_fontsize() == 15, "labels follow the style's font size"
    assert axes.get_xticklabels()[0].get_fontsize() == 15
    assert found["sweep-cum_regret"].legends[0].get_texts()[0].get_fontsize() == 15
    assert axes.xaxis.label.get_fontfamily() == ["serif"]
    assert axes.spines["left"].get_edgecolor() == (1.0, 0.0, 0.0, 1.0)
    style.write_text("font.size: 15\naxes.labelsize: 21\n")
    found = drawn(monkeypatch, tau_sweep, "--out", tmp_path / "b", "--style", style)
    capsys.readouterr()
    axes = found["sweep-cum_regret"].axes[0]
    assert axes.xaxis.label.get_fontsize() == 21 and axes.get_xticklabels()[0].get_fontsize() == 15
    default = drawn(monkeypatch, tau_sweep, "--out", tmp_path / "c")["sweep-cum_regret"]
    talk = drawn(monkeypatch, tau_sweep, "--out", tmp_path / "d", "--context", "talk")
    capsys.readouterr()
    sizes = [f.axes[0].xaxis.label.get_fontsize() for f in (default, talk["sweep-cum_regret"])]
    assert sizes[0] == pytest.approx(9.6) and sizes[1] == pytest.approx(18.0), "seaborn contexts"


def test_a_bad_style_file_is_one_line(tau_sweep: Path, tmp_path: Path, capsys) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["plot", str(tau_sweep), "--out", str(tmp_path), "--style", str(tmp_path / "no")])
    assert stopped.value.code == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("nslb: error: --style: ") and "no such file" in line


def lightness(color: str) -> float:
    return colorsys.rgb_to_hls(*to_rgb(color))[1]


def test_an_ordered_sweep_is_one_hue_light_to_dark(
    tau_sweep: Path, tmp_path: Path, capsys, monkeypatch
) -> None:
    labels = [f"CD-UCB (tau={tau})" for tau in TAUS]
    for n in (2, 3, 8, 12):
        shades = [lightness(c) for c in ramp(own_style("cd_ucb").color, n)]
        assert all(a > b for a, b in zip(shades, shades[1:], strict=False)), n
    found = drawn(monkeypatch, tau_sweep, "--out", tmp_path)
    capsys.readouterr()
    legend = found["sweep-cum_regret"].legends[0]
    colors = {
        text.get_text().rsplit(" (n=", 1)[0]: handle.get_color()
        for text, handle in zip(legend.get_texts(), legend.legend_handles, strict=True)
    }
    shades = [lightness(colors[label]) for label in labels]
    assert all(a > b for a, b in zip(shades, shades[1:], strict=False)), "tau=10 lightest"
    hues = [colorsys.rgb_to_hls(*to_rgb(colors[label]))[0] for label in labels]
    own = colorsys.rgb_to_hls(*to_rgb(own_style("cd_ucb").color))[0]
    assert max(abs(hue - own) for hue in hues) < 0.01, "one hue: the agent's own"
    styles = {
        handle.get_linestyle()
        for text, handle in zip(legend.get_texts(), legend.legend_handles, strict=True)
        if text.get_text().startswith("CD-UCB")
    }
    assert len(styles) == 1, "one line style for the family"
    assert colors["mTS"] == own_style("mts").color and len(set(colors.values())) == len(colors)


def test_tick_labels_never_collide(tau_sweep: Path, tmp_path: Path, capsys, monkeypatch):
    styles = style_map(["CD-UCB"], {"CD-UCB": "cd_ucb"})
    points = pd.DataFrame({"agent": "CD-UCB", "x": TAUS, "mean": 1.0, "se": 0.1, "n": 3})
    figure = sweep(points, parameter="agent.tau", value_label="v", title="", styles=styles)
    assert_no_overlapping_tick_labels(figure)
    shown = [t.get_text() for t in figure.axes[0].get_xticklabels() if t.get_text()]
    assert shown[0] == "10" and shown[-1] == "1000", "the ends keep their labels"
    assert len(shown) < len(TAUS), "800 and 1000 side by side: one is left blank"
    for figure in drawn(monkeypatch, tau_sweep, "--out", tmp_path, "--log-x").values():
        assert_no_overlapping_tick_labels(figure)
    capsys.readouterr()


def test_sixteen_agents_in_publication_mode_keep_every_guarantee(
    tmp_path: Path, capsys, monkeypatch
):
    for i, tau in enumerate(TAUS):
        run_config = hand.config("many", "cd_ucb", tau=tau, threshold=None, gamma=0.0)
        hand.write_run(
            tmp_path / f"cd/{tau}", run_config, {s: (20.0 - i + s, 2.0) for s in range(2)}
        )
    for i, agent in enumerate(
        ("cd_ts", "exp4s", "exp3s", "mts", "umts", "oracle", "random", "sw_mucb")
    ):
        finals = {s: (5.0 * i + s, 1.0 + 0.1 * i) for s in range(2)}
        hand.write_run(tmp_path / agent, hand.config("many", agent), finals)
    found = drawn(monkeypatch, tmp_path, "--out", tmp_path / "figs", "--paper")
    capsys.readouterr()
    for stem, figure in found.items():
        assert_no_overlapping_tick_labels(figure)
        assert not any(axes.get_title() for axes in figure.axes), stem
    legend = found["many-cum_regret"].legends[0]
    assert len(legend.get_texts()) == 16
    pairs = {(h.get_color(), str(h.get_linestyle())) for h in legend.legend_handles}
    assert len(pairs) == 16 and len({h.get_color() for h in legend.legend_handles}) == 16


def test_axes_sizes_do_not_depend_on_the_theme() -> None:
    styles = style_map(["mTS"], {"mTS": "mts"})
    stats = pd.DataFrame({"agent": pd.Categorical(["mTS"] * 3), "t": [1, 2, 3], "mean": 1.0,
                          "se": 0.1, "n": 2})  # fmt: skip
    sizes = []
    for context in ("paper", "poster"):
        with figures.drawing_with(figures.theme(context)):
            figure = figures.curves(stats, value_label="v", title="t", styles=styles)
        axes: Axes = figure.axes[0]
        sizes.append(axes.get_position().width * figure.get_size_inches()[0])
    assert sizes[0] == pytest.approx(sizes[1]) == pytest.approx(figures.PANEL[0])


def test_axis_labels_never_outgrow_their_plotting_area() -> None:
    """Figure 3's y label, "average reward (running mean)", is taller than its 3-inch panel
    in the poster context: it is broken into lines, each word kept, instead."""
    agents = ["mTS"]
    styles = style_map(agents, {"mTS": "mts"})
    stats = pd.DataFrame({"agent": pd.Categorical(agents * 3), "t": [1, 2, 3],
                          "mean": [0.5, 0.6, 0.7], "se": 0.01, "n": 5})  # fmt: skip
    label = "average reward (running mean)"
    for context in ("paper", "poster"):
        with figures.drawing_with(figures.theme(context)):
            figure = paper.draw(paper.FIGURES[1], [stats, stats], styles)
        renderer = figure.canvas.get_renderer()  # type: ignore[attr-defined]
        axes = figure.axes[0]
        drawn = axes.yaxis.label
        assert drawn.get_window_extent(renderer).height <= axes.get_window_extent(renderer).height
        assert drawn.get_text().split() == label.split()
        lines = drawn.get_text().count("\n") + 1
        assert lines == (1 if context == "paper" else 2), (context, drawn.get_text())


QUICK = ("--metric", "cum_regret", "--dpi", "30")  # fewer figures, fewer pixels


@pytest.fixture(scope="module")
def fixed_changes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """paper/fixed in small: mTS and Random, 2 seeds of 60 rounds, a change every 20."""
    root = tmp_path_factory.mktemp("fixed")
    env = replace(SMALL, dynamics="fixed")
    for agent in ("mts", "random"):
        write_run(root / f"paper/fixed/{agent}", agent, [0, 1], env, name="paper/fixed")
    return root


def test_paired_differences_and_change_points_are_drawn_and_captioned(
    fixed_changes: Path, tmp_path: Path, capsys, monkeypatch
) -> None:
    found = drawn(monkeypatch, fixed_changes, "--out", tmp_path, "--paper", *QUICK)
    capsys.readouterr()
    (diff,) = (stem for stem in found if stem.endswith("-diff_cum_regret"))
    axes = found[diff].axes[0]
    assert [t.get_text() for t in found[diff].legends[0].get_texts()] == ["Random"]
    assert axes.get_ylabel() == "Δ cumulative regret to mTS"
    assert any(list(line.get_ydata()) == [0, 0] for line in axes.lines), "the zero line"
    for stem in ("figure2", diff, diff.replace("diff_cum_regret", "cum_regret")):
        lines = found[stem].axes[0].lines
        assert sorted(ln.get_xdata()[0] for ln in lines if len(set(ln.get_xdata())) == 1) == [
            21,
            41,
        ], stem
        caption = (tmp_path / f"{stem}.caption.txt").read_text()
        assert "Grey vertical lines: the true change points" in caption, stem
        assert "n in the legend" not in caption and re.search("2 (runs|seeds)", caption), stem
    assert "over the 2 seeds both ran" in (tmp_path / f"{diff}.caption.txt").read_text()


def test_no_paired_differences_without_a_reference(
    fixed_changes: Path, tmp_path: Path, capsys, monkeypatch
) -> None:
    found = drawn(monkeypatch, fixed_changes, "--out", tmp_path, "--reference", "none", *QUICK)
    capsys.readouterr()
    assert any(stem.endswith("-cum_regret") for stem in found)
    assert not [stem for stem in found if "-diff_" in stem]
