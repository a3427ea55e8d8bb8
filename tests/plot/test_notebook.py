"""The notebook API: load_results and summarise against the CSVs and against nslb plot."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from nslb_cli.cli import main
from nslb_cli.plot.notebook import load_results, palette, summarise
from tests.plot import hand


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """mTS and umTS at 10 and 1000 particles (resamples recorded), 3 seeds, 4 rounds."""
    root = tmp_path_factory.mktemp("results")
    hand.write_run(
        root / "e/mts", hand.config("e", "mts"), {0: (10.5, 2.25), 1: (12.0, 2.5), 2: (9.25, 2.0)}
    )
    for particles, finals, resamples in (
        (10, {0: (8.0, 2.5), 1: (9.5, 2.75), 2: (7.0, 3.0)}, (4, 6, 5)),
        (1000, {0: (6.5, 3.0), 1: (7.25, 3.25), 2: (6.0, 2.5)}, (2, 2, 3)),
    ):
        run_config = hand.config("e", "umts", num_particles=particles, resampling="systematic")
        stats = {seed: {"resamples": r} for seed, r in zip(finals, resamples, strict=True)}
        hand.write_run(root / f"e/umts/{particles}", run_config, finals, stats)
    return root


def test_load_results_is_one_tidy_frame(results: Path) -> None:
    frame = load_results(results)
    assert list(frame.columns) == [
        "group",
        "agent",
        "agent.name",
        "agent.num_particles",
        "agent.resampling",
        "seed",
        "t",
        "cum_regret",
        "avg_reward",
        "resamples",
    ]
    assert len(frame) == 3 * 3 * 4
    assert list(frame["agent"].cat.categories) == [
        "mTS",
        "umTS (num_particles=10)",
        "umTS (num_particles=1000)",
    ]
    assert set(frame["group"]) == {"e"}, "and no data column: these worlds have no data"
    rows = frame[(frame["agent"] == "umTS (num_particles=10)") & (frame["seed"] == 1)]
    csv = pd.read_csv(results / "e/umts/10/seed=1.csv")
    np.testing.assert_array_equal(rows["t"], csv["t"])
    np.testing.assert_allclose(rows["cum_regret"], csv["cum_regret"], rtol=1e-6)
    np.testing.assert_allclose(rows["avg_reward"], csv["cum_reward"] / csv["t"], rtol=1e-6)
    assert set(rows["resamples"]) == {6.0}, "the seed's statistic on each of its rounds"
    assert frame.loc[frame["agent.name"] == "mts", "resamples"].isna().all()
    assert rows["agent.num_particles"].iloc[0] == 10
    assert frame["agent.num_particles"].dtype == "Int64", "numbers, not categories"
    assert frame["agent.num_particles"].sum() == (10 + 1000) * 12
    assert isinstance(frame["agent.resampling"].dtype, pd.CategoricalDtype)
    assert frame["cum_regret"].dtype == np.float64


def test_metrics_are_the_values_written_and_statistics_do_not_take_a_settings_name(
    tmp_path: Path,
) -> None:
    """A value of 17 significant digits is read back as the CSV writes it (0.22481561071511635,
    not float32's 0.2248156); Exp3.S's statistic ``gamma`` (the value it used) sits beside its
    setting ``agent.gamma`` as ``stat_gamma``, and the summary names it as nslb plot's does."""
    for gamma, final in ((0.1, 252.39999999999998), (0.2, 0.22481561071511635)):
        run_config = hand.config("x", "exp3s", gamma=gamma)
        stats = {0: {"gamma": gamma}}
        hand.write_run(tmp_path / f"x/{gamma}", run_config, {0: (final, 1.0)}, stats)
    frame = load_results(tmp_path)
    assert sorted(frame.loc[frame["t"] == 4, "cum_regret"]) == [
        0.22481561071511635,
        252.39999999999998,
    ]
    assert list(frame.columns[-1:]) == ["stat_gamma"] and "agent.gamma" in frame
    assert "gamma_mean" in summarise(frame, reference="none")


def test_results_of_several_folders_load_as_one(results: Path) -> None:
    both = load_results([results / "e/mts", str(results / "e/umts"), results / "e/umts/10"])
    assert both.equals(load_results(results)), "labelled and grouped as one folder's"
    with pytest.raises(FileNotFoundError, match="nope"):
        load_results([results, results / "nope"])


def test_the_palette_is_the_colours_of_nslbs_figures() -> None:
    colours = palette(["mTS", "CD-UCB", "mine", "yours"])
    assert colours["mTS"] == "#0072B2" and colours["CD-UCB"] == "#009E73"  # the paper's
    assert len(set(colours.values())) == 4


def test_load_results_selects_rounds_metrics_and_agents(results: Path) -> None:
    frame = load_results(results, rounds=(2, 3), metrics=["regret"], agents=["umts"])
    assert set(frame["t"]) == {2, 3} and "cum_regret" not in frame and "regret" in frame
    assert set(frame["agent.name"]) == {"umts"}
    assert "agent.num_particles" in frame, "it varies among the runs selected"
    assert set(load_results(results, rounds=2)["t"]) == {1, 2}
    assert set(load_results(results, rounds="3:")["t"]) == {3, 4}
    with pytest.raises(ValueError, match="unknown metrics"):
        load_results(results, metrics=["regrets"])
    with pytest.raises(FileNotFoundError):
        load_results(results / "nope")


def test_summarise_by_hand(results: Path) -> None:
    table = summarise(load_results(results)).set_index("agent")
    assert list(table.columns[:4]) == [
        "group",
        "agent.name",
        "agent.num_particles",
        "n_seeds",
    ], "the settings that vary among its rows: resampling is the default everywhere"
    # umTS (10): final regrets 8, 9.5, 7 -> mean 8.1666…; Δ to mTS per seed -2.5, -2.5, -2.25
    row = table.loc["umTS (num_particles=10)"]
    assert row["cum_regret_mean"] == pytest.approx(24.5 / 3, abs=1e-12)
    assert row["diff_cum_regret_mean"] == pytest.approx(-7.25 / 3, abs=1e-12)
    assert row["n_pairs"] == 3 and row["reference"] == "mTS"
    assert row["avg_reward_mean"] == pytest.approx((2.5 + 2.75 + 3.0) / 12, abs=1e-12)
    # resamples 4, 6, 5: mean 5, SE 1 / sqrt(3)
    assert row["resamples_mean"] == 5.0 and row["resamples_se"] == pytest.approx(3**-0.5)
    assert table.loc["mTS", "cum_regret_iqm"] == pytest.approx(31.75 / 3)


def test_summarise_equals_the_summary_nslb_plot_writes(results: Path, tmp_path, capsys):
    main(["plot", str(results), "--out", str(tmp_path), "--format", "png"])
    capsys.readouterr()
    written = pd.read_csv(tmp_path / "summary.csv")
    mine = summarise(load_results(results))
    assert list(mine.columns) == list(written.columns)
    for column in written.columns:
        if pd.api.types.is_numeric_dtype(written[column]):
            np.testing.assert_allclose(mine[column].astype(float), written[column], rtol=1e-9)
        else:
            assert list(mine[column].fillna("").astype(str)) == list(
                written[column].fillna("").astype(str)
            ), column


def test_summarise_at_another_round_and_reference(results: Path) -> None:
    frame = load_results(results)
    early = summarise(frame[frame["t"] <= 2], reference="umts(num_particles=1000)")
    early = early.set_index("agent")
    assert set(early["final_t"]) == {2} and set(early["reference"]) == {"umTS (num_particles=1000)"}
    with pytest.raises(ValueError, match="'umts' names 2 agents in group 'e'"):
        summarise(frame, reference="umts")
    none = summarise(frame, reference="none")
    assert none["diff_cum_regret_mean"].isna().all() and set(none["reference"]) == {""}
    boot = summarise(frame, ci="bootstrap")
    assert (boot["cum_regret_ci_low"] <= boot["cum_regret_mean"]).all()
    with pytest.raises(ValueError, match="summarise needs the columns"):
        summarise(frame.drop(columns="cum_regret"))


def test_load_results_of_a_folder_without_results_says_so(tmp_path: Path) -> None:
    """An empty folder, or one whose only seed file is unreadable, is a ValueError in nslb
    plot's words (it was ``KeyError: 'name'``)."""
    with pytest.raises(ValueError, match="no results in .*no complete seed=K.csv files"):
        load_results(tmp_path)
    run = tmp_path / "e" / "random"
    run.mkdir(parents=True)
    (run / "seed=0.csv").write_text("t,action\n1,0\n")
    with (
        pytest.warns(UserWarning, match="skipped"),
        pytest.raises(ValueError, match="no readable results in"),
    ):
        load_results(tmp_path)


@pytest.mark.parametrize(
    ("selection", "message"),
    [
        ({"rounds": 0}, "rounds start at 1"),
        ({"rounds": (-3, None)}, "rounds start at 1"),
        ({"rounds": (30, 10)}, "START must not exceed END"),
        ({"rounds": 1.5}, "expected START:END with whole numbers"),
        ({"rounds": "2:x"}, "expected START:END with whole numbers"),
        ({"rounds": 10**6}, "END 1000000 is past the last round"),
        ({"agents": ["nobody"]}, "--agents: no results for nobody; present: "),
    ],
    ids=str,
)
def test_load_results_refuses_what_nslb_plot_refuses(results: Path, selection, message) -> None:
    """Rounds and agents nslb plot refuses are ValueErrors with its words (load_results
    returned an empty frame, or cut round 1.5 to 1)."""
    with pytest.raises(ValueError, match=message):
        load_results(results, **selection)
