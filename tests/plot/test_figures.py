"""Figures a researcher would publish (issue 10): readable with 16 agents, one style per
agent everywhere, sweeps that compare like with like, the data part of every group, the
paper's figures in the paper's layout, honest about seeds."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from nslb_cli.cli import main
from nslb_cli.plot import aggregate, paper, report
from nslb_cli.plot.figures import curves, final_distribution, sweep
from nslb_cli.plot.layout import SMALLEST_PANEL, new_figure
from nslb_cli.plot.styles import own_style, style_map
from nslb_cli.plot.tidy import load
from tests.helpers.results_tree import MOVIELENS_ENV, fake_config, write_fake_run

SIXTEEN = [
    *(f"CD-UCB (tau={tau})" for tau in (20, 50, 100, 200)),
    *(f"umTS (num_particles={n}, resampling=systematic)" for n in (10, 30, 100, 300, 1000)),
    "CD-TS",
    "Exp4.S",
    "mTS",
    "Oracle",
    "Random",
    "my_agent (learning_rate=0.001)",
    "SW-mUCB (tau=50)",
]
PLAIN = {"CD-TS": "cd_ts", "Exp4.S": "exp4s", "mTS": "mts", "Oracle": "oracle", "Random": "random"}
SYNTHETIC = {"name": "synthetic", "dynamics": "fixed", "horizon": 30}


def stats_of(agents: list[str], horizon: int = 200) -> pd.DataFrame:
    """Per-round mean ± SE tables of ``agents`` (one group), 100 seeds each."""
    t = np.arange(1, horizon + 1)
    frames = [
        pd.DataFrame({"agent": a, "t": t, "mean": (i + 1) * t / 50, "se": 1.0, "n": 100})
        for i, a in enumerate(agents)
    ]
    table = pd.concat(frames, ignore_index=True)
    table["agent"] = pd.Categorical(table["agent"], categories=agents, ordered=True)
    return table


def finals_of(agents: list[str], seeds: int = 20) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    table = pd.DataFrame(
        [(a, s, 100, 10.0 * i + rng.normal()) for i, a in enumerate(agents) for s in range(seeds)],
        columns=["agent", "seed", "t", "cum_regret"],
    )
    table["agent"] = pd.Categorical(table["agent"], categories=agents, ordered=True)
    return table


def check_readable(figure: Figure, min_share: float = 0.6) -> None:
    """Every panel keeps >= ``min_share`` of the figure's width and height; every text is
    inside the canvas."""
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    canvas = figure.bbox
    for axes in figure.axes:
        box = axes.get_window_extent(renderer)
        assert box.width >= min_share * canvas.width / len(figure.axes), "axes too narrow"
        assert box.height >= min_share * canvas.height, "axes too short"
    texts = list(figure.texts)  # the caption of a paper figure
    for legend in figure.legends:
        texts += [legend.get_title(), *legend.get_texts()]
    for axes in figure.axes:
        texts += [axes.title, axes.xaxis.label, axes.yaxis.label]
        for axis, (low, high) in ((axes.xaxis, axes.get_xlim()), (axes.yaxis, axes.get_ylim())):
            texts += [
                tick.label1
                for tick in axis.get_major_ticks()
                if min(low, high) <= tick.get_loc() <= max(low, high)
            ]  # the tick labels drawn
    for text in texts:
        if not text.get_text().strip():
            continue
        box = text.get_window_extent(renderer)
        inside = box.x0 >= -1 and box.y0 >= -1
        inside = inside and box.x1 <= canvas.width + 1 and box.y1 <= canvas.height + 1
        assert inside, f"{text.get_text()!r} is clipped: {box} outside {canvas}"
    tight = figure.get_tightbbox(renderer)  # inches
    size = figure.get_size_inches()
    assert tight.x0 >= -0.01 and tight.y0 >= -0.01
    assert tight.x1 <= size[0] + 0.01 and tight.y1 <= size[1] + 0.01


def test_sixteen_agents_give_readable_figures() -> None:
    styles = style_map(SIXTEEN, PLAIN)
    figure = curves(stats_of(SIXTEEN), value_label="cumulative regret", title="t", styles=styles)
    check_readable(figure)
    assert len(figure.legends[0].get_texts()) == 16
    box = final_distribution(
        finals_of(SIXTEEN),
        value="cum_regret",
        value_label="final cumulative regret (round 100)",
        title="a long group title (dynamics=markov, switch_prob=0.0025, model=prior)",
        styles=styles,
        note=report.SEEDS_NOTE,
    )
    check_readable(box)
    points = pd.DataFrame(
        [(a, x, float(i + x), 1.0, 10) for i, a in enumerate(SIXTEEN) for x in (10, 100, 1000)],
        columns=["agent", "x", "mean", "se", "n"],
    )
    check_readable(
        sweep(points, parameter="agent.num_particles", value_label="v", title="t", styles=styles)
    )
    figure = paper.draw(paper.FIGURES[1], [stats_of(SIXTEEN), stats_of(SIXTEEN)], styles)
    check_readable(figure)


def test_axes_keep_their_size_whatever_the_legend() -> None:
    few = curves(stats_of(["mTS"]), value_label="v", title="t", styles=style_map(["mTS"], {}))
    many = curves(stats_of(SIXTEEN), value_label="v", title="t", styles=style_map(SIXTEEN, PLAIN))
    sizes = [f.axes[0].get_position().width * f.get_size_inches()[0] for f in (few, many)]
    assert sizes[0] == pytest.approx(sizes[1]), "the figure grows, the axes do not shrink"
    assert many.get_size_inches()[0] > few.get_size_inches()[0]


def test_every_agent_has_its_own_colour_and_line_style() -> None:
    styles = style_map(SIXTEEN, PLAIN)
    assert len({s.color for s in styles.values()}) == 16
    assert len({(s.color, s.linestyle) for s in styles.values()}) == 16
    for label, name in PLAIN.items():
        assert styles[label] == own_style(name), "the paper's agents keep their styles"
    alone = style_map(["mTS", "umTS (num_particles=10)"], {"mTS": "mts"})
    assert alone["mTS"] == styles["mTS"], "whatever else is in the report"
    many = style_map([f"agent {i}" for i in range(60)], {})
    assert len({(s.color, s.linestyle) for s in many.values()}) == 60


def test_a_label_keeps_its_style_in_every_figure_of_a_report(tmp_path: Path) -> None:
    env = {**SYNTHETIC, "dynamics": "markov"}
    for n in (10, 100):
        write_fake_run(
            tmp_path / f"r/umts/{n}", fake_config("e", env, "umts", num_particles=n), [0]
        )
    write_fake_run(tmp_path / "r/mts", fake_config("e", env, "mts"), [0])
    frame, runs = aggregate.labelled(load(tmp_path).frame, load(tmp_path).runs)
    final = aggregate.finals(frame)
    swept = report.sweeps(final, runs, {})
    styles = report._styles(runs, swept, {})
    assert {"mTS", "umTS (num_particles=10)", "umTS (num_particles=100)", "umTS"} <= set(styles)
    assert styles["mTS"] == own_style("mts") and styles["umTS"] == own_style("umts")


@pytest.fixture(scope="module")
def two_envs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A particle sweep on two environments: fixed (3 seeds, regret 0.2 a round) and markov
    (2 seeds, regret 0.8 a round); mts on both."""
    root = tmp_path_factory.mktemp("outputs")
    for dynamics, seeds, level, particles in (
        ("fixed", [0, 1, 2], 0.2, (10, 100, 1000)),
        ("markov", [0, 1], 0.8, (10, 100)),
    ):
        env = {**SYNTHETIC, "dynamics": dynamics}
        for n in particles:
            config = fake_config("exp", env, "umts", num_particles=n, resampling="systematic")
            write_fake_run(root / f"exp/{dynamics}/umts/{n}", config, seeds, level)
        write_fake_run(root / f"exp/{dynamics}/mts", fake_config("exp", env, "mts"), seeds, level)
    return root


def test_sweeps_compare_only_runs_of_one_environment(two_envs: Path, tmp_path, capsys) -> None:
    main(["plot", str(two_envs), "--out", str(tmp_path), "--format", "png"])
    capsys.readouterr()
    sweeps = sorted(p.name for p in tmp_path.glob("*sweep*"))
    assert sweeps == [
        "exp_dynamics=fixed-sweep-num_particles.png",
        "exp_dynamics=markov-sweep-num_particles.png",
    ], "one figure per environment; dynamics is never a swept setting"
    loaded = load(two_envs)
    frame, runs = aggregate.labelled(loaded.frame, loaded.runs)
    found = {s.group: s for s in report.sweeps(aggregate.finals(frame), runs, {})}
    fixed, markov = found["exp (dynamics=fixed)"], found["exp (dynamics=markov)"]
    assert list(fixed.points["x"]) == [10, 100, 1000] and list(markov.points["x"]) == [10, 100]
    assert set(fixed.points["n"]) == {3} and set(markov.points["n"]) == {2}
    horizon = SYNTHETIC["horizon"]
    assert fixed.points["mean"].max() < 0.5 * horizon < markov.points["mean"].min()
    assert list(fixed.references["agent"]) == ["mTS"] and list(fixed.references["n"]) == [3]


def test_sweep_axes_are_logarithmic_beyond_a_decade_and_in_natural_order() -> None:
    styles = style_map(["A"], {})

    def axes(xs: list) -> object:
        points = pd.DataFrame({"agent": "A", "x": xs, "mean": 1.0, "se": 0.1, "n": 3})
        return sweep(points, parameter="p", value_label="v", title="t", styles=styles).axes[0]

    assert axes([1000, 10, 100]).get_xscale() == "log"
    assert axes([10, 100]).get_xscale() == "linear", "exactly a decade"
    words = axes(["w100", "w20", "w5"])
    assert [t.get_text() for t in words.get_xticklabels()] == ["w5", "w20", "w100"]


def test_two_datasets_with_the_same_name_never_share_a_group(tmp_path: Path, capsys) -> None:
    """mTS on one dataset and Random on another, both named `ml`: two groups, no pairing."""
    env_a = {**MOVIELENS_ENV, "data_dir": "/data/ml-100k"}
    env_b = {**MOVIELENS_ENV, "data_dir": "/data/ml-latest-small"}
    write_fake_run(
        tmp_path / "a/mts",
        fake_config("ml", env_a, "mts"),
        [0, 1],
        0.2,
        {"fingerprint": "aaaa1111" * 8},
    )
    write_fake_run(
        tmp_path / "a/random",
        fake_config("ml", env_a, "random"),
        [0, 1],
        0.9,
        {"fingerprint": "aaaa1111" * 8},
    )
    write_fake_run(
        tmp_path / "b/mts",
        fake_config("ml", env_b, "mts"),
        [0, 1],
        0.3,
        {"fingerprint": "bbbb2222" * 8},
    )
    write_fake_run(tmp_path / "c/random", fake_config("ml", MOVIELENS_ENV, "random"), [0, 1], 0.9)
    main(["plot", str(tmp_path), "--out", str(tmp_path / "figs"), "--format", "png"])
    out = capsys.readouterr().out
    summary = pd.read_csv(tmp_path / "figs/summary.csv")
    groups = summary.groupby("group")["agent"].apply(list).to_dict()
    assert groups == {
        "ml (data=ml-100k [aaaa1111])": ["mTS", "Random"],
        "ml (data=ml-latest-small [bbbb2222])": ["mTS"],
        "ml (data=ml-1m)": ["Random"],
    }
    paired = summary.set_index(["group", "agent"])["n_pairs"]
    assert paired[("ml (data=ml-100k [aaaa1111])", "Random")] == 2
    assert pd.isna(paired[("ml (data=ml-1m)", "Random")]), "no mTS on that dataset: no pairs"
    assert "environment: movielens (data=/data/ml-100k [ratings aaaa1111], " in out
    assert "environment: movielens (data=ml-1m, " in out
    assert "release=" not in out, "the release is named only when it is the data used"


def test_the_default_valued_override_is_the_same_agent(tmp_path: Path, capsys) -> None:
    env = {**SYNTHETIC}
    default = fake_config("e", env, "umts", num_particles=100)
    write_fake_run(tmp_path / "e/umts", default, [0, 1])
    write_fake_run(tmp_path / "e/umts/agent.num_particles=100", default, [1, 2])
    write_fake_run(
        tmp_path / "e/umts/agent.num_particles=10",
        fake_config("e", env, "umts", num_particles=10),
        [0],
    )
    main(["plot", str(tmp_path), "--out", str(tmp_path / "figs"), "--format", "png"])
    err = capsys.readouterr().err
    summary = pd.read_csv(tmp_path / "figs/summary.csv").set_index("agent")
    assert list(summary.index) == ["umTS (num_particles=10)", "umTS (num_particles=100)"]
    assert summary.loc["umTS (num_particles=100)", "n_seeds"] == 3
    (line,) = err.splitlines()
    assert f"{tmp_path}/e/umts/agent.num_particles=100: seed 1 is also in " in line


def test_seed_sets_that_differ_are_said(tmp_path: Path, capsys) -> None:
    write_fake_run(tmp_path / "e/mts", fake_config("e", SYNTHETIC, "mts"), [0, 1, 2, 3])
    write_fake_run(tmp_path / "e/random", fake_config("e", SYNTHETIC, "random"), [0, 1, 5])
    main(["plot", str(tmp_path), "--out", str(tmp_path / "figs"), "--format", "png"])
    out = capsys.readouterr().out
    assert "seed sets differ between agents: mTS 0–3; Random 0–1, 5" in out
    (tmp_path / "e/random/seed=5.csv").unlink()
    write_fake_run(tmp_path / "e/random", fake_config("e", SYNTHETIC, "random"), [2, 3])
    main(["plot", str(tmp_path), "--out", str(tmp_path / "figs"), "--format", "png"])
    assert "seed sets differ" not in capsys.readouterr().out


def test_paper_figures_in_the_papers_layout(tmp_path: Path, capsys) -> None:
    for preset, dynamics, model in (
        ("fixed", "fixed", "known"),
        ("known", "markov", "known"),
        ("prior", "markov", "prior"),
    ):
        env = {**SYNTHETIC, "dynamics": dynamics, "model": model}
        for agent in ("mts", "umts", "cd_ucb"):
            write_fake_run(
                tmp_path / f"smoke/paper/{preset}/{agent}",
                fake_config(f"smoke/paper/{preset}", env, agent),
                [0, 1],
            )
    main(["plot", str(tmp_path), "--out", str(tmp_path / "figs"), "--format", "png,pdf", "--paper"])
    capsys.readouterr()
    names = {p.name for p in (tmp_path / "figs").glob("figure*")}
    assert names == {
        *("figure2.png", "figure2.pdf", "figure2.caption.txt"),
        *("figure3.png", "figure3.pdf", "figure3.caption.txt"),
    }, "no MovieLens"
    pdf = (tmp_path / "figs/figure2.pdf").read_bytes()  # the fonts' objects are not compressed
    assert b"/Type3" not in pdf and b"/CIDFontType2" in pdf, "TrueType, as submissions take"
    env = {**MOVIELENS_ENV, "release": "ml-100k"}
    write_fake_run(
        tmp_path / "paper/movielens/mts", fake_config("paper/movielens", env, "mts"), [0]
    )
    main(["plot", str(tmp_path), "--out", str(tmp_path / "figs"), "--format", "png", "--paper"])
    capsys.readouterr()
    assert (tmp_path / "figs/figure4.png").is_file()
    caption = (tmp_path / "figs/figure4.caption.txt").read_text()
    assert caption.startswith('Figure 4: mean and standard error of reward across 1 "superusers"')
    assert "data ml-100k" in caption and "/" not in caption.replace("paper/movielens", "")


def test_paper_figures_say_when_seed_sets_differ(tmp_path: Path, capsys) -> None:
    env = {**SYNTHETIC, "dynamics": "fixed", "model": "known"}
    write_fake_run(tmp_path / "paper/fixed/mts", fake_config("paper/fixed", env, "mts"), [0, 1])
    write_fake_run(tmp_path / "paper/fixed/umts", fake_config("paper/fixed", env, "umts"), [2, 3])
    main(["plot", str(tmp_path), "--out", str(tmp_path / "figs"), "--format", "png", "--paper"])
    capsys.readouterr()
    caption = (tmp_path / "figs/figure2.caption.txt").read_text()
    assert caption.count("\n") == 1 and caption.endswith(".\n")
    assert "Fixed change-points (paper/fixed; agents ran different seed sets)" in caption


def test_figure_3_has_its_two_panels_side_by_side() -> None:
    agents = ["CD-UCB", "mTS", "umTS"]
    styles = style_map(agents, {"CD-UCB": "cd_ucb", "mTS": "mts", "umTS": "umts"})
    figure = paper.draw(paper.FIGURES[1], [stats_of(agents), stats_of(agents)], styles)
    left, right = (axes.get_position() for axes in figure.axes)
    assert left.x1 < right.x0 and left.y0 == pytest.approx(right.y0)
    assert left.width == pytest.approx(right.width) and left.height == pytest.approx(right.height)
    assert [axes.get_title() for axes in figure.axes] == ["", ""], "captions go in a file"
    assert [axes.get_title(loc="left") for axes in figure.axes] == ["(a)", "(b)"]
    (legend,) = figure.legends
    shown = [t.get_text() for t in legend.get_texts()]
    assert shown == agents[::-1], "as the lines end, highest first; 100 seeds each: no n"
    check_readable(figure)


def test_a_legend_names_seed_counts_only_where_they_differ() -> None:
    agents = ["CD-UCB", "mTS"]
    styles = style_map(agents, {"CD-UCB": "cd_ucb", "mTS": "mts"})
    same = curves(stats_of(agents), value_label="v", title="g", styles=styles)
    (legend,) = same.legends
    assert [t.get_text() for t in legend.get_texts()] == ["mTS", "CD-UCB"]
    assert legend.get_title().get_text() == "agent"
    assert same.axes[0].get_title() == "g: mean ± SE over 100 seeds", "the count, said once"
    stats = stats_of(agents)
    stats.loc[stats["agent"] == "mTS", "n"] = 40
    uneven = curves(stats, value_label="v", title="g", styles=styles)
    (legend,) = uneven.legends
    assert [t.get_text() for t in legend.get_texts()] == ["mTS (n=40)", "CD-UCB (n=100)"]
    assert uneven.axes[0].get_title() == "g: mean ± SE over seeds"
    box = final_distribution(
        finals_of(agents), value="cum_regret", value_label="v", title="", styles=styles
    )
    assert [t.get_text() for t in box.axes[0].get_yticklabels()] == agents


def test_true_change_points_are_grey_lines_behind_the_curves() -> None:
    agents = ["mTS"]
    figure = curves(
        stats_of(agents), value_label="v", title="", styles=style_map(agents, {}),
        changes=(21, 41, 900),
    )  # fmt: skip
    vertical = [line for line in figure.axes[0].lines if len(set(line.get_xdata())) == 1]
    assert sorted(line.get_xdata()[0] for line in vertical) == [21, 41], "inside the rounds"
    curve = max(line.get_zorder() for line in figure.axes[0].lines if line not in vertical)
    assert all(line.get_zorder() < 1 < curve for line in vertical), "behind bands and lines"


def test_no_plotting_area_is_smaller_than_the_one_resolutions_are_checked_against() -> None:
    """``nslb plot`` refuses a resolution before drawing from the smallest figure there can
    be; a smaller plotting area would slip past that check."""
    new_figure(2, SMALLEST_PANEL)
    with pytest.raises(ValueError, match="smaller than"):
        new_figure(1, (SMALLEST_PANEL[0], SMALLEST_PANEL[1] - 0.1))


def test_a_file_that_is_no_style_is_one_line(tmp_path: Path, capsys) -> None:
    """--style on a file that is not a style: one reason (matplotlib logged a warning for
    each of its lines, and the figures were drawn anyway)."""
    from nslb_cli.plot.figures import read_style

    notes = tmp_path / "notes.txt"
    notes.write_text("hello world\nthis is not a style\nfoo\n")
    with pytest.raises(ValueError, match=r"not a matplotlib style file \(Missing colon.*2 more"):
        read_style(notes)
    assert capsys.readouterr().err == ""
    style = tmp_path / "ok.mplstyle"
    style.write_text("font.size: 9\n")
    assert read_style(style)["font.size"] == 9


def _texts(figure: Figure) -> list:
    """Every text drawn: legend, titles, axis labels, the tick labels shown."""
    figure.canvas.draw()
    texts = [t for legend in figure.legends for t in (legend.get_title(), *legend.get_texts())]
    for axes in figure.axes:
        texts += [axes.title, axes.xaxis.label, axes.yaxis.label]
        texts += [t for t in axes.texts + axes.get_children() if hasattr(t, "get_fontsize")]
        texts += [t for t in axes.get_xticklabels() + axes.get_yticklabels() if t.get_text()]
    return [t for t in texts if t.get_text()]


@pytest.mark.parametrize(("width", "stacked"), [(6.75, False), (3.25, True)])
def test_a_paper_figure_at_a_page_width_is_that_wide_with_fonts_of_7pt(
    width: float, stacked: bool
) -> None:
    """Figure 3 as printed: the figure's width is the page's, no text below 7 pt, panels
    labelled (a) and (b) (one under the other when side by side they would be narrower than
    1.2 in), one legend below them."""
    agents = ["CD-UCB", "mTS", "umTS"]
    styles = style_map(agents, {"CD-UCB": "cd_ucb", "mTS": "mts", "umTS": "umts"})
    panels = [stats_of(agents), stats_of(agents)]
    figure = paper.draw(paper.FIGURES[1], panels, styles, width=width)
    assert figure.get_size_inches()[0] == pytest.approx(width)
    texts = _texts(figure)
    assert min(t.get_fontsize() for t in texts) >= 7 and len(texts) > 20
    assert [axes.get_title(loc="left") for axes in figure.axes] == ["(a)", "(b)"]
    renderer = figure.canvas.get_renderer()
    (legend,) = figure.legends
    lowest = min(axes.get_tightbbox(renderer).y0 for axes in figure.axes)
    assert legend.get_window_extent(renderer).y1 < lowest, "the legend below the panels"
    left, right = (axes.get_position() for axes in figure.axes)
    assert (right.y1 < left.y0) == stacked and (left.x1 < right.x0) == (not stacked)
    assert figure.bbox.contains(*legend.get_window_extent(renderer).p1)


@pytest.mark.parametrize(
    "arguments", [["--width", "1.5", "--paper"], ["--width", "5"], ["--column", "single"]]
)
def test_a_page_width_is_for_the_papers_figures_and_a_panel_to_fit(
    arguments: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["plot", str(tmp_path), *arguments])
    err = capsys.readouterr().err
    assert stopped.value.code == 2 and err.count("\n") == 1
    assert "give it with --paper, between 2 and 20 inches" in err
