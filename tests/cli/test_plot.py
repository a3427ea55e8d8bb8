"""``nslb plot`` on generated outputs trees: files, image sizes, tables, options and errors."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from functools import partial
from pathlib import Path

import pandas as pd
import pytest
from PIL import Image

from nslb_cli.cli import main
from nslb_cli.cli.plot import parse
from nslb_cli.plot import report
from nslb_cli.plot.figures import curves
from nslb_cli.plot.progress import Progress
from nslb_cli.plot.report import PlotError
from nslb_cli.plot.styles import style_map
from nslb_cli.plot.tables import format_pm
from tests.helpers.results_tree import SMALL, write_run
from tests.plot import hand

H = SMALL.horizon


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A partial sweep: mts 4 seeds, umts at two particle counts with 3 seeds, random 2 seeds."""
    root = tmp_path_factory.mktemp("outputs")
    write_run(root / "exp/synthetic/mts", "mts", [0, 1, 2, 3])
    write_run(root / "exp/synthetic/umts/p10", "umts", [0, 1, 2], num_particles=10)
    write_run(root / "exp/synthetic/umts/p40", "umts", [0, 1, 2], num_particles=40)
    write_run(root / "exp/synthetic/random", "random", [0, 1])
    return root


def plot(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[str, str]:
    main(["plot", *map(str, argv)])
    captured = capsys.readouterr()
    return captured.out, captured.err


def test_figures_and_tables_are_written(tree: Path, tmp_path: Path, capsys) -> None:
    out, err = plot(capsys, tree, "--out", tmp_path, "--dpi", 50)
    names = {path.name for path in tmp_path.iterdir()}
    for stem in ("exp-cum_regret", "exp-avg_reward", "exp-final_cum_regret"):
        assert {f"{stem}.png", f"{stem}.pdf"} <= names
    assert {"exp-sweep-num_particles.png", "exp-sweep-num_particles.pdf"} <= names
    assert {"exp-summary.md", "exp-summary.csv", "summary.md", "summary.csv"} <= names
    assert {"exp-diff_cum_regret.png", "summary.tex", "exp-summary.tex"} <= names
    for png in tmp_path.glob("*.png"):
        with Image.open(png) as image:
            assert image.format == "PNG" and min(image.size) > 100, png.name
    for pdf in tmp_path.glob("*.pdf"):
        assert pdf.read_bytes().startswith(b"%PDF-"), pdf.name
    assert err == "" and "wrote 12 figure files and 6 table files" in out
    assert "| mTS | 4 |" in out, "the summary is printed too"


def test_a_format_named_twice_is_written_and_counted_once(tree: Path, tmp_path, capsys):
    out, _ = plot(capsys, tree, "--out", tmp_path, "--format", "png, png")
    assert "wrote 6 figure files and 6 table files" in out  # it said 12, for 6 files
    assert len(list(tmp_path.glob("*.png"))) == 6


def test_summary_table_shows_partial_seeds_and_paired_differences(tree: Path, tmp_path, capsys):
    plot(capsys, tree, "--out", tmp_path, "--format", "png")
    summary = pd.read_csv(tmp_path / "exp-summary.csv").set_index("agent")
    assert summary.loc["mTS", "n_seeds"] == 4 and summary.loc["Random", "n_seeds"] == 2
    assert summary.loc["umTS (num_particles=10)", "n_pairs"] == 3
    assert summary.loc["Random", "n_pairs"] == 2
    assert set(summary["reference"]) == {"mTS"} and set(summary["final_t"]) == {H}
    # the paired difference equals the mean over shared seeds of the per-seed differences
    finals = {
        agent: pd.Series(
            {
                s: pd.read_csv(tree / f"exp/synthetic/{agent}/seed={s}.csv")["cum_regret"].iloc[-1]
                for s in seeds
            }
        )
        for agent, seeds in (("mts", range(4)), ("random", range(2)))
    }
    expected = (finals["random"] - finals["mts"].loc[[0, 1]]).mean()
    assert summary.loc["Random", "diff_cum_regret_mean"] == pytest.approx(expected, rel=1e-5)
    text = (tmp_path / "exp-summary.md").read_text()
    assert "| Random | 2 |" in text and "(reference)" in text


def test_default_out_is_the_results_folder(tmp_path: Path, capsys) -> None:
    write_run(tmp_path / "x/synthetic/mts", "mts", [0, 1])
    plot(capsys, tmp_path, "--format", "png")
    assert (tmp_path / "exp-cum_regret.png").is_file() and (tmp_path / "exp-summary.md").is_file()


def test_options_select_rename_restrict_and_choose_metrics(tree: Path, tmp_path, capsys):
    out, _ = plot(
        capsys,
        tree,
        "--out",
        tmp_path,
        "--format",
        "png",
        "--agents",
        "random,mts",
        "--rename",
        "mts=model TS",
        "--rounds",
        ":25",
        "--metric",
        "regret",
        "--log-y",
    )
    summary = pd.read_csv(tmp_path / "summary.csv")
    assert list(summary["agent"]) == ["Random", "model TS"], "selected agents, in that order"
    assert set(summary["final_t"]) == {25} and set(summary["reference"]) == {"model TS"}
    assert (tmp_path / "exp-regret.png").is_file() and not (
        tmp_path / "exp-cum_regret.png"
    ).exists()
    assert not list(tmp_path.glob("*sweep*")), "umts left out: nothing swept"


def test_reference_option(tree: Path, tmp_path: Path, capsys) -> None:
    _, err = plot(capsys, tree, "--out", tmp_path, "--format", "png", "--reference", "Random")
    summary = pd.read_csv(tmp_path / "summary.csv").set_index("agent")
    assert set(summary["reference"]) == {"Random"} and err == ""
    assert summary.loc["mTS", "n_pairs"] == 2, "mts has 4 seeds, random 2: two pairs"
    (tmp_path / "summary.csv").unlink()
    with pytest.raises(SystemExit) as stopped:  # an agent that is not there is an error
        plot(capsys, tree, "--out", tmp_path, "--format", "png", "--reference", "cd_ucb")
    assert stopped.value.code == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("nslb: error: --reference: 'cd_ucb' names no agent in group 'exp'")
    assert not (tmp_path / "summary.csv").exists(), "nothing written"


def test_a_reference_that_names_several_agents_is_one_line_naming_the_group(
    tree: Path, tmp_path: Path, capsys
) -> None:
    with pytest.raises(SystemExit) as stopped:
        plot(capsys, tree, "--out", tmp_path, "--format", "png", "--reference", "umts")
    assert stopped.value.code == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line == (
        "nslb: error: --reference: 'umts' names 2 agents in group 'exp' "
        "(umTS (num_particles=10), umTS (num_particles=40)); name one, e.g. "
        "'umts(num_particles=10)'"
    )
    assert not (tmp_path / "summary.csv").exists(), "nothing written"
    _, err = plot(
        capsys, tree, "--out", tmp_path, "--format", "png", "--reference", "umts(num_particles=40)"
    )
    summary = pd.read_csv(tmp_path / "summary.csv").set_index("agent")
    assert set(summary["reference"]) == {"umTS (num_particles=40)"} and err == ""
    assert summary.loc["mTS", "n_pairs"] == 3, "mts has seeds 0-3, umts 0-2"


def test_help_names_the_selector_and_publication_mode(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["plot", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "'umts(num_particles=100)'" in text
    for option in ("--paper, --publication", "--style FILE", "--context", "--ci"):
        assert option in text
    assert parse(["d", "--publication"]).paper and parse(["d", "--paper"]).paper


def test_long_group_titles_get_short_distinct_file_names(tmp_path: Path, capsys) -> None:
    """Two experiments whose names share their first 250 characters: each group's files
    fit 100 characters (a prefix and a hash), and neither overwrites the other."""
    for last in "ab":
        name = "x" * 250 + last
        write_run(tmp_path / "runs" / last, "mts", [0, 1], name=name)
    out, err = plot(capsys, tmp_path / "runs", "--out", tmp_path / "figures", "--format", "png")
    names = [p.name for p in (tmp_path / "figures").iterdir()]
    assert err == "" and "wrote 6 figure files" in out
    assert all(len(n.encode()) <= 100 for n in names), max(names, key=len)
    assert len({n for n in names if n.endswith("-cum_regret.png")}) == 2


def test_bad_files_are_reported_in_one_line_and_skipped(tmp_path: Path, capsys) -> None:
    write_run(tmp_path / "e/synthetic/mts", "mts", [0, 1])
    write_run(tmp_path / "e/synthetic/random", "random", [0])
    bad = tmp_path / "e/synthetic/mts/seed=1.csv"
    bad.write_text(bad.read_text()[:500])
    (tmp_path / "e/synthetic/random/config.yaml").unlink()
    out, err = plot(capsys, tmp_path, "--out", tmp_path / "figs", "--format", "png")
    lines = err.splitlines()
    assert len(lines) == 2
    assert any(str(bad) in line and "truncated" in line for line in lines)
    assert any(str(tmp_path / "e/synthetic/random/config.yaml") in line for line in lines)
    assert "| mTS | 1 |" in out


def test_nothing_to_plot_is_one_error_line(tmp_path: Path, capsys) -> None:
    cases = [
        ("empty", lambda root: None, "no results in"),
        ("empty-subfolder", lambda root: (root / "a").mkdir(), "no results in"),
        (
            "all-skipped",
            lambda root: root.joinpath("seed=0.csv").write_text("t\n"),
            "no readable results",
        ),
    ]
    for name, setup, message in cases:
        root = tmp_path / name
        root.mkdir()
        setup(root)
        with pytest.raises(SystemExit) as exit_info:
            main(["plot", str(root)])
        err = capsys.readouterr().err.splitlines()
        assert exit_info.value.code == 2, name
        assert err[-1].startswith("nslb: error: ") and message in err[-1], name


def test_missing_folder_is_one_error_line(tmp_path: Path, capsys) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["plot", str(tmp_path / "nope")])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err == f"nslb: error: {tmp_path / 'nope'}: no such folder\n"


def test_a_file_given_as_the_results_folder_is_named_as_such(tmp_path: Path, capsys) -> None:
    """Not blamed on ``--out`` (which defaults to it), nor called missing."""
    (tmp_path / "notes.txt").write_text("")
    for out in ([], ["--out", "figures"]):
        with pytest.raises(SystemExit) as exit_info:
            main(["plot", str(tmp_path / "notes.txt"), *out])
        assert exit_info.value.code == 2
        assert capsys.readouterr().err == (
            f"nslb: error: {tmp_path / 'notes.txt'}: not a folder; give the folder of the "
            "results to plot\n"
        ), out


BAD_OPTIONS = [
    (["--format", "png,xyz"], "--format: unsupported"),
    (["--metric", "regrets"], "--metric: unknown"),
    (["--rounds", "5:2"], "START must not exceed END"),
    (["--rounds", "0:10"], "rounds start at 1"),
    (["--rounds", "a:b"], "whole numbers"),
    (["--rename", "mts"], "AGENT=LABEL"),
    (["--dpi", "0"], "--dpi"),
    (["--bogus"], "unrecognized arguments"),
]


def test_bad_options_are_refused() -> None:
    for argv, message in BAD_OPTIONS:
        with pytest.raises(PlotError, match=message):
            parse(["somewhere", *argv])


TOO_FINE = "would draw figures of 420,000 × 270,000 pixels or more; at most 100,000,000 pixels \
a figure: use 2,969 dpi or less"
"""What a resolution of 100,000 dpi draws of the smallest figure (4.2 x 2.7 inches)."""


def refused_styled(results: Path, tmp_path: Path, style: Path, *argv: str) -> object:
    """The exit status of ``nslb plot results --out tmp_path/f --style style argv…``, which
    must end the command."""
    with pytest.raises(SystemExit) as stopped:
        main(["plot", str(results), "--out", str(tmp_path / "f"), "--style", str(style), *argv])
    return stopped.value.code


def test_a_resolution_too_fine_to_draw_is_refused_before_drawing(
    hand_tree: Path, tmp_path: Path, capsys
) -> None:
    """From ``--dpi`` or from either resolution of a style: not a MemoryError traceback from
    matplotlib, once the results are read."""
    cases = [
        (["--dpi", "100000"], "", f"--dpi 100000 {TOO_FINE}"),
        ([], "savefig.dpi: 100000", f"--style: savefig.dpi 100000 {TOO_FINE}"),
        (["--format", "pdf"], "figure.dpi: 100000", f"--style: figure.dpi 100000 {TOO_FINE}"),
    ]
    for argv, style, message in cases:
        (tmp_path / "s.mplstyle").write_text(style + "\n")
        assert refused_styled(hand_tree, tmp_path, tmp_path / "s.mplstyle", *argv) == 2
        assert capsys.readouterr().err == f"nslb: error: {message}\n"
        assert not (tmp_path / "f").exists(), "refused before anything is drawn or written"


def test_vector_figures_take_any_resolution(hand_tree: Path, tmp_path: Path, capsys) -> None:
    out, _ = plot(capsys, hand_tree, "--out", tmp_path, "--format", "pdf", "--dpi", "100000")
    assert "wrote 6 figure files" in out and (tmp_path / "e-cum_regret.pdf").is_file()


def test_a_figure_grown_too_large_to_draw_is_refused(
    hand_tree: Path, tmp_path: Path, capsys
) -> None:
    """Fonts of 3,000 points make a figure hundreds of inches wide: an image of it is
    refused in one line (its size said) before it is drawn."""
    (tmp_path / "huge.mplstyle").write_text("font.size: 3000\n")
    assert refused_styled(hand_tree, tmp_path, tmp_path / "huge.mplstyle", "--format", "png") == 2
    err = capsys.readouterr().err
    assert re.fullmatch(
        r"nslb: error: e-\w+: 150 dpi would draw a [\d,]+ × [\d,]+-pixel figure \([\d,.]+ × "
        r"[\d,.]+ inches\); at most 100,000,000 pixels a figure: use \d+ dpi or less\n",
        err,
    ), err
    assert not list((tmp_path / "f").glob("*.png"))


def test_run_folders_behind_symbolic_links_are_plotted_once(tmp_path: Path, capsys) -> None:
    """A run folder that is a link to results kept elsewhere is followed; a second path to
    a folder already read (``latest``, a loop of two links) adds nothing; a link to a folder
    above it (a loop) is named in one line and left out, never walked round."""
    kept = tmp_path / "kept"
    hand.write_run(kept / "mts", hand.config("e", "mts"), {0: (10.5, 2.25), 1: (12.0, 2.5)})
    hand.write_run(kept / "umts", hand.config("e", "umts"), {0: (8.0, 2.5), 1: (9.5, 2.75)})
    root = tmp_path / "results"
    (root / "e").mkdir(parents=True)
    (root / "e/mts").symlink_to(kept / "mts", target_is_directory=True)
    (root / "e/umts").symlink_to(kept / "umts", target_is_directory=True)
    (root / "latest").symlink_to(root / "e/mts", target_is_directory=True)
    (root / "e/loop").symlink_to(root, target_is_directory=True)
    (kept / "mts/next").symlink_to(kept / "umts", target_is_directory=True)  # a loop of two:
    (kept / "umts/next").symlink_to(kept / "mts", target_is_directory=True)  # each read once
    out, err = plot(capsys, root, "--out", tmp_path / "f", "--format", "png")
    assert err == (
        f"nslb plot: skipped {root / 'e/loop'}: a link to {root}, a folder above it (a loop)\n"
    )
    summary = pd.read_csv(tmp_path / "f/summary.csv").set_index("agent")
    assert list(summary.index) == ["mTS", "umTS"] and set(summary["n_seeds"]) == {2}
    assert summary.loc["umTS", "diff_cum_regret_mean"] == -2.5, "(8 - 10.5 + 9.5 - 12) / 2"


def test_rounds_option() -> None:
    assert parse(["d", "--rounds", "10:20"]).rounds == (10, 20)
    assert parse(["d", "--rounds", ":20"]).rounds == (None, 20)
    assert parse(["d", "--rounds", "20"]).rounds == (None, 20)
    assert parse(["d", "--rounds", "5:"]).rounds == (5, None)
    assert parse(["d"]).out == Path("d"), "--out defaults to DIR"


def test_runs_without_rounds_in_the_range_are_left_out_with_a_line(tmp_path: Path, capsys) -> None:
    write_run(tmp_path / "runs/short", "mts", [0, 1])  # horizon 60
    write_run(tmp_path / "runs/long", "mts", [0, 1], env=replace(SMALL, horizon=120))
    out, err = plot(capsys, tmp_path / "runs", "--out", tmp_path / "f", "--rounds", "80:100")
    assert err == "nslb plot: left out short: no rounds in 80…100 (--rounds)\n"
    assert "horizon=120" in out and "| mTS | 2 |" in out, "the long run's group is drawn"


def test_mean_se_formatting() -> None:
    assert format_pm(92.56, 2.59) == "92.6 ± 2.6"
    assert format_pm(0.6123, 0.0103) == "0.612 ± 0.010"
    assert format_pm(3.0, 0.25, signed=True) == "+3.00 ± 0.25"
    assert format_pm(1234.4, 56.0) == "1234 ± 56"
    assert format_pm(0.0, 0.0) == "0.000 ± 0.000", "zero spread (an oracle's regret)"
    assert format_pm(5.0, float("nan")) == "5", "one seed: no SE"


def test_curves_legend_is_outside_the_axes_and_skips_agents_without_values() -> None:
    stats = pd.DataFrame(
        {
            "agent": ["mTS"] * 3 + ["Random"] * 3,
            "t": [1, 2, 3] * 2,
            "mean": [0.2, 0.5, 0.7, float("nan"), float("nan"), float("nan")],
            "se": [0.1, 0.1, 0.1, float("nan"), float("nan"), float("nan")],
            "n": [4, 4, 4, 0, 0, 0],
        }
    )
    styles = style_map(["mTS", "Random"], {"mTS": "mts", "Random": "random"})
    figure = curves(stats, value_label="posterior mass", title="g", styles=styles)
    figure.canvas.draw()
    (legend,) = figure.legends
    assert [text.get_text() for text in legend.get_texts()] == ["mTS"]
    renderer = figure.canvas.get_renderer()
    box, axes_box = legend.get_window_extent(renderer), figure.axes[0].get_window_extent(renderer)
    assert box.x0 >= axes_box.x1, "the legend sits right of the axes, never over the curves"
    assert figure.axes[0].get_xlabel() == "round t"


@pytest.fixture
def hand_tree(tmp_path: Path) -> Path:
    """Short decimals by hand: mts (defaults), CD-UCB at tau 50 and 200 with detections,
    umts with 10 particles; 4 rounds, seeds 0-2."""
    root = tmp_path / "results"
    hand.write_run(
        root / "e/mts", hand.config("e", "mts"), {0: (10.5, 2.25), 1: (12.0, 2.5), 2: (9.25, 2.0)}
    )
    for tau, finals, detections in (
        (50, {0: (20.5, 1.5), 1: (22.0, 1.25), 2: (19.75, 1.75)}, (3, 5, 4)),
        (200, {0: (15.0, 2.0), 1: (16.5, 1.5), 2: (14.25, 2.25)}, (1, 1, 2)),
    ):
        run_config = hand.config("e", "cd_ucb", tau=tau, threshold=None, gamma=0.0)
        stats = {seed: {"detections": d} for seed, d in zip(finals, detections, strict=True)}
        hand.write_run(root / f"e/cd_ucb/tau={tau}", run_config, finals, stats)
    run_config = hand.config("e", "umts", num_particles=10, resample_threshold=0.5)
    hand.write_run(root / "e/umts", run_config, {0: (8.0, 2.5), 1: (9.5, 2.75), 2: (7.0, 3.0)})
    return root


def test_summary_csv_has_a_column_per_varying_setting_and_exact_values(
    hand_tree: Path, tmp_path: Path, capsys
) -> None:
    plot(capsys, hand_tree, "--out", tmp_path, "--format", "png")
    text = (tmp_path / "summary.csv").read_text()
    header = text.splitlines()[0].split(",")
    assert header[:5] == ["group", "agent", "agent.name", "agent.tau", "agent.num_particles"], (
        "the settings that vary among the rows, after the label; threshold, gamma and "
        "resample_threshold are the same wherever recorded, env settings are one group's"
    )
    summary = pd.read_csv(tmp_path / "summary.csv", dtype={"agent.tau": str}).set_index("agent")
    assert list(summary.index) == [
        "CD-UCB (tau=50)",
        "CD-UCB (tau=200)",
        "mTS",
        "umTS (num_particles=10)",
    ]
    # CD-UCB tau=50: final regrets 20.5, 22, 19.75 -> mean 62.25 / 3 = 20.75
    row = text.splitlines()[1].split(",")
    assert row[:4] == ["e", "CD-UCB (tau=50)", "cd_ucb", "50"]
    values = dict(zip(header, row, strict=True))
    assert values["cum_regret_mean"] == "20.75", "decimal, no float32 noise"
    # avg reward: cum_reward / 4 = 0.375, 0.3125, 0.4375 -> mean 0.375
    assert values["avg_reward_mean"] == "0.375"
    # Δ to mTS per seed: 10, 10, 10.5 -> 10.1666…
    assert values["diff_cum_regret_mean"] == "10.1666666667"
    assert values["cum_regret_iqm"] == "20.75", "three seeds: int(0.75) = 0 cut"
    assert summary.loc["mTS", "cum_regret_mean"] == 10.5833333333, "31.75 / 3 to 12 digits"
    assert "e.g." not in text and "246.0600" not in text
    assert not any(c.startswith("env.") for c in header)


def test_per_seed_statistics_are_mean_and_se_in_both_tables(
    hand_tree: Path, tmp_path: Path, capsys
) -> None:
    out, _ = plot(capsys, hand_tree, "--out", tmp_path, "--format", "png")
    summary = pd.read_csv(tmp_path / "e-summary.csv").set_index("agent")
    # detections 3, 5, 4: mean 4, sample variance 1, SE 1 / sqrt(3)
    assert summary.loc["CD-UCB (tau=50)", "detections_mean"] == 4
    assert summary.loc["CD-UCB (tau=50)", "detections_se"] == pytest.approx(1 / 3**0.5, 1e-9)
    # detections 1, 1, 2: mean 4/3, sample variance 1/3, SE 1/3
    assert summary.loc["CD-UCB (tau=200)", "detections_se"] == pytest.approx(1 / 3, 1e-9)
    assert pd.isna(summary.loc["mTS", "detections_mean"])
    assert "| CD-UCB (tau=50) | 3 |" in out and "detections 4.00 ± 0.58 |" in out
    assert "detections 1.33 ± 0.33 |" in out


def test_bootstrap_intervals_are_the_same_every_run(
    hand_tree: Path, tmp_path: Path, capsys
) -> None:
    """Three seeds of short decimals give a bootstrap few distinct resampled means, so an
    unseeded one often repeats its intervals; twelve seeds of uneven values (group ``wide``)
    give every metric's interval a new value with each unseeded draw."""
    for agent, base, step, divisor in (("mts", 10.0, 7, 1000), ("umts", 8.0, 5, 700)):
        finals = {
            s: (base + (s * step % 12) * 0.375 + s * s / divisor, 0.5 + s * s / 1000)
            for s in range(12)
        }
        hand.write_run(hand_tree / f"wide/{agent}", hand.config("wide", agent), finals)
    out, _ = plot(
        capsys, hand_tree, "--out", tmp_path / "a", "--format", "png", "--ci", "bootstrap"
    )
    plot(capsys, hand_tree, "--out", tmp_path / "b", "--format", "png", "--ci", "bootstrap")
    first, second = (
        pd.read_csv(tmp_path / d / "summary.csv").set_index(["group", "agent"]) for d in "ab"
    )
    for metric in ("cum_regret", "avg_reward", "diff_cum_regret"):
        bounds = [f"{metric}_ci_low", f"{metric}_ci_high"]
        assert first[bounds].equals(second[bounds]), metric
        low, high = first[bounds[0]], first[bounds[1]]
        mean = first[f"{metric}_mean"]  # the reference's difference: 0 on every seed
        assert ((low <= mean) & (mean <= high)).all(), metric
        assert low[("wide", "umTS")] < mean[("wide", "umTS")] < high[("wide", "umTS")], metric
    assert first.equals(second)
    assert "[95 % bootstrap CI of the mean]" in out and "20.75 ± 0.66 [" in out


def test_publication_mode_writes_captions_beside_every_figure(
    hand_tree: Path, tmp_path: Path, capsys
) -> None:
    plot(capsys, hand_tree, "--out", tmp_path, "--format", "png", "--publication")
    figures = {p.name.removesuffix(".png") for p in tmp_path.glob("*.png")}
    captions = {p.name.removesuffix(".caption.txt") for p in tmp_path.glob("*.caption.txt")}
    assert figures == captions and "e-cum_regret" in figures and "e-sweep-tau" in figures
    text = (tmp_path / "e-avg_reward.caption.txt").read_text()
    assert text.startswith("e: average reward (running mean), mean over 3 seeds")
    assert "Environment: synthetic (dynamics=fixed, horizon=4)." in text
    plotted = json.loads((tmp_path / ".nslb-plot.json").read_text())["files"]
    assert "e-avg_reward.caption.txt" in plotted, "recorded before it is written"


def test_sweep_references_can_be_left_out_and_the_log_axis_chosen(tmp_path: Path) -> None:
    """By default Random is a horizontal line with its band beside CD-UCB's tau sweep (50,
    200: within a decade, linear); the options drop it and choose the axis."""
    points = pd.DataFrame({"agent": "CD-UCB", "x": [50, 200], "mean": 1.0, "se": 0.1, "n": 3})
    others = pd.DataFrame({"agent": ["Random"], "mean": [2.0], "se": [0.1], "n": [3]})
    found = report.Sweep("e", "agent.tau", points, others, {})
    styles = style_map(["CD-UCB", "Random"], {})

    def sweep_figure(*argv: str) -> tuple[object, str]:
        work = report._Work(parse(["d", "--paper", *argv]), report._Stems(tmp_path))
        report._sweep_figure(work, found, tmp_path / "e", styles)
        (job,) = work.jobs
        return job.draw(**job.arguments).axes[0], work.captions[job.stem]

    axes, caption = sweep_figure()
    assert (len(axes.patches), len(axes.lines), axes.get_xscale()) == (1, 4, "linear")
    rule = "above 0 whose largest is over 10 times the smallest, else linear)"
    assert f"(x axis: logarithmic where the values are numbers {rule}" in caption
    axes, caption = sweep_figure("--no-sweep-references", "--sweep-log-x", "on")
    assert (len(axes.patches), len(axes.lines), axes.get_xscale()) == (0, 3, "log"), "CD-UCB's"
    assert "x axis: logarithmic where the values are numbers above 0, else linear)." in caption
    assert "horizontal lines" not in caption


def test_latent_ar_family_files_are_named_by_preset_within_100_characters(
    tmp_path: Path, capsys
) -> None:
    """Trella et al.'s k = 5 and 10 presets: coefficients at full precision named no file."""
    coefficients = {5: [0.20916055274476228, -0.2190633204475691] * 2 + [0.23316333161133482]}
    coefficients[10] = [0.08349499177393256, -0.14150353166531912] * 5
    for k, values in coefficients.items():
        env = {"name": "latent_ar", "order": k, "coefficients": values, "horizon": 4}
        run_config = hand.config("family/latent_ar", "larl", env)
        hand.write_run(tmp_path / f"r/latent_ar/paper_k{k}/larl", run_config, {0: (3.0, 1.0)})
    argv = ("--out", tmp_path / "f", "--paper", "--format", "png", "--dpi", "30")
    out, _ = plot(capsys, tmp_path / "r", *argv, "--metric", "cum_regret")
    names = [path.name for path in (tmp_path / "f").iterdir()]
    assert "family_latent_ar_paper_k10_order=10-final_cum_regret.caption.txt" in names
    assert max(map(len, names)) <= 100, max(names, key=len)
    assert "### family/latent_ar (paper_k5, order=5)\n" in out


def test_file_names_stay_within_100_characters_whatever_the_suffix() -> None:
    stems = report._Stems(Path("out"))
    stem = stems.new("x" * 300)
    for suffix in ("final_cum_regret", "sweep-" + "a_setting" * 20):
        name = stems.suffixed(stem, suffix).name
        assert len(f"{name}.caption.txt") <= 100 and name.startswith(f"{stem.name}-"), name
    other = stems.suffixed(stem, "sweep-" + "a_setting" * 21).name
    assert other != stems.suffixed(stem, "sweep-" + "a_setting" * 20).name, "hashed apart"


def test_a_long_plot_says_what_it_has_read_and_drawn(
    hand_tree: Path, tmp_path: Path, capsys, monkeypatch
) -> None:
    """With the threshold at 0 every step is due: one line per run folder read and figure
    drawn (a fast plot's silence is Progress's own test; stderr here is no terminal)."""
    quick = partial(Progress, after=0.0, every=0.0)
    monkeypatch.setattr(report, "Progress", lambda say, shown: quick(say))
    _, err = plot(capsys, hand_tree, "--out", tmp_path, "--format", "png", "--metric", "reward")
    lines = err.splitlines()
    assert lines[:4] == [f"nslb plot: read {n} of 12 seed files" for n in (0, 3, 6, 9)]
    n = len(list(tmp_path.glob("*.png")))
    assert lines[4:] == [f"nslb plot: drew {i} of {n} figures" for i in range(n)]
