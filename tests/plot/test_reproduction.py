"""The claim tables of ``nslb plot --paper``: one per paper whose presets ran, each claim's
paired difference, its test, Holm's adjustment, the verdict and the departures flagged."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from nslb_cli.cli import main
from nslb_cli.plot import paper, reproduction
from nslb_cli.plot.reproduction import HONG, RUSSO, TRELLA
from tests.helpers.results_tree import fake_config, write_fake_run

FIXED = {  # final cumulative regret of seeds 0-3 in paper/fixed's group
    "mts": [10.0, 12.0, 11.0, 13.0],
    "cd_ucb": [20.0, 22.0, 19.0, 25.0],  # mTS lower by 10, 10, 8, 12
    "cd_ts": [11.0, 11.0, 12.0, 12.0],  # by -1, 1, -1, 1
    "umts": [30.0, 31.0, 29.0, 30.0],  # higher than CD-UCB by 10, 9, 10, 5
}
SYNTHETIC = pd.DataFrame({"group": ["g"], "env.name": ["synthetic"]})  # the labelled runs


def _final(values: dict[str, list[float]], metric: str = "cum_regret", t: int = 500):
    rows = [
        {"group": "g", "agent": agent, "agent.name": agent, "seed": seed, "t": t, metric: value}
        for agent, of_agent in values.items()
        for seed, value in enumerate(of_agent)
    ]
    return pd.DataFrame(rows)


def test_each_claim_is_tested_by_its_paired_difference_with_holms_adjustment() -> None:
    claims = reproduction.check(HONG, _final(FIXED), {"fixed": "g"}, SYNTHETIC)
    assert len(claims) == 28 and set(claims["figure"]) == {"2", "3a", "3b", "4"}
    assert set(claims.loc[claims["figure"] != "2", "verdict"]) == {"not run"}
    table = claims[claims["figure"] == "2"].set_index("claim")
    held = table.loc["mTS beats CD-UCB"]
    d = np.array([10.0, 10.0, 8.0, 12.0])
    assert held["n_pairs"] == 4 and held["round"] == 500 and held["diff_mean"] == 10.0
    assert held["diff_se"] == pytest.approx(np.sqrt(8 / 3) / 2)  # sd of 0, 0, -2, 2 over 2
    assert held["p_value"] == pytest.approx(stats.ttest_1samp(d, 0.0).pvalue)
    tested = claims["p_value"].notna().sum()
    assert tested == 5, "CD-UCB, CD-TS for each sampler and the alike claim; Exp4.S not run"
    smallest = table.loc["umTS beats CD-TS", "p_value"]  # by -19, -20, -17, -18
    assert smallest < held["p_value"], "the next smallest, the second of five"
    assert held["p_holm"] == pytest.approx(max(5 * smallest, 4 * held["p_value"]))
    assert held["verdict"] == "held"
    assert table.loc["mTS beats CD-TS", "verdict"] == "not significant"
    assert table.loc["umTS beats CD-UCB", "verdict"] == "reversed"
    assert table.loc["mTS beats Exp4.S", "verdict"] == "not run"


def test_holm_multiplies_the_ith_smallest_and_keeps_the_order() -> None:
    adjusted = reproduction.holm([0.01, 0.04, 0.03, math.nan])
    assert adjusted[:3] == pytest.approx([0.03, 0.06, 0.06]) and math.isnan(adjusted[3])


def test_a_claim_significant_alone_is_not_held_after_holm() -> None:
    values = {"mts": [10.0, 12.0, 11.0, 13.0], "cd_ucb": [11.5, 12.5, 12.5, 13.5]}  # by 1.5, .5, …
    values |= {"cd_ts": [20.0, 22.0, 21.0, 23.0], "umts": [20.0, 22.0, 21.0, 23.0]}
    claims = reproduction.check(HONG, _final(values), {"fixed": "g"}, SYNTHETIC)
    claims = claims[claims["figure"] == "2"].set_index("claim")
    alone = claims.loc["mTS beats CD-UCB"]
    assert alone["p_value"] < 0.05 < alone["p_holm"] and alone["verdict"] == "not significant"


def test_alike_needs_equivalence_within_the_margin_not_merely_no_difference() -> None:
    base = np.array([100.0, 104.0, 96.0, 100.0, 102.0, 98.0])
    tight = {"mts": list(base), "umts": list(base + [1, -1, 1, -1, 0.5, -0.5])}
    noisy = {"mts": list(base), "umts": list(base + [30, -30, 25, -25, 20, -20])}
    verdicts = {}
    for name, values in (("tight", tight), ("noisy", noisy)):
        claims = reproduction.check(HONG, _final(values), {"fixed": "g"}, SYNTHETIC)
        alike = (
            claims[claims["figure"] == "2"]
            .set_index("claim")
            .loc["mTS and umTS perform alike (known model)"]
        )
        verdicts[name] = alike["verdict"]
        d = -(np.array(values["mts"]) - np.array(values["umts"]))
        margin = 0.1 * base.mean()  # a tenth of mTS's mean final regret
        lower = stats.ttest_1samp(d, -margin, alternative="greater").pvalue
        upper = stats.ttest_1samp(d, margin, alternative="less").pvalue
        assert alike["p_value"] == pytest.approx(max(lower, upper)), name
        assert alike["test"].startswith("TOST ±10")  # 0.1 × 100, to the SE's digits
    assert verdicts == {"tight": "held", "noisy": "not significant"}, "noisy: mean 0, SE 9"


def test_a_row_names_its_data_and_flags_where_it_departs_from_the_paper() -> None:
    runs = pd.DataFrame({"group": ["g"], "env.name": ["movielens"], "env.release": ["ml-100k"],
                         "data": ["release:ml-100k"]})  # fmt: skip
    final = _final({"umts": [0.6, 0.7, 0.65], "mts": [0.5, 0.55, 0.6]}, "avg_reward", t=200)
    claims = reproduction.check(HONG, final, {"movielens": "g"}, runs).set_index("claim")
    row = claims[claims["figure"] == "4"].loc["umTS beats mTS"]
    assert row["data"] == "ml-100k" and row["round"] == 200
    assert (
        row["departures"]
        == "data ml-100k (paper: ml-1m); round 200 (paper: 2000); 3 seeds (paper: 100)"
    )


ERRORS = {224: [0.9, 0.8, 1.0], 800: [0.5, 0.5, 0.5], 3200: [0.3, 0.25, 0.35]}  # by T0, seeds 0-2


def test_sl_ec_estimation_compares_its_shortest_and_longest_exploration_by_seed() -> None:
    rows = [
        {"group": "g", "agent": f"SL-EC (exploration={t0})", "agent.name": "sl_ec", "seed": s,
         "t": 3200, "cum_regret": 1.0, "exploration": t0, "transition_error": error}
        for t0, errors in ERRORS.items()
        for s, error in enumerate(errors)
    ]  # fmt: skip
    runs = pd.DataFrame({"group": ["g"], "env.name": ["switching_latent"]})
    claims = reproduction.check(
        RUSSO, pd.DataFrame(rows), {"switching_latent_estimation": "g"}, runs
    )
    row = claims[claims["figure"] == "estimation"].iloc[0]
    assert "224 against 3200" in row["claim"] and row["diff_mean"] == pytest.approx(0.6)
    d = np.array([0.6, 0.55, 0.65])
    assert row["p_value"] == pytest.approx(stats.ttest_1samp(d, 0.0).pvalue)
    assert row["verdict"] == "held"
    assert set(claims.loc[claims["figure"] != "estimation", "verdict"]) == {"not run"}
    one = pd.DataFrame([r for r in rows if r["exploration"] == 800])
    alone = reproduction.check(RUSSO, one, {"switching_latent_estimation": "g"}, runs)
    assert alone["verdict"].iloc[-1] == "not run", "one exploration length shows no trend"


def test_each_preset_has_its_key_and_latent_ar_one_per_order() -> None:
    runs = pd.DataFrame({
        "name": ["paper/fixed", "smoke/paper/fixed", "family/switching_latent",
                 "family/latent_ar", "family/latent_ar", "mine"],
        "group": ["a", "b", "c", "d", "e", "f"],
        "env.order": [None, None, None, 1.0, 10.0, None],
    })  # fmt: skip
    keys = [paper.preset_key(row) for _, row in runs.iterrows()]
    assert keys == ["fixed", "fixed", "switching_latent", "latent_ar/k1", "latent_ar/k10", None]
    groups = paper.preset_groups(runs, dict.fromkeys(range(6), 3) | {1: 5}, lambda _: None)
    assert groups == {"fixed": "b", "switching_latent": "c", "latent_ar/k1": "d",
                      "latent_ar/k10": "e"}  # fmt: skip
    assert set(TRELLA.settings) == {"latent_ar/k1", "latent_ar/k5", "latent_ar/k10"}


def test_the_summary_counts_verdicts_by_kind() -> None:
    claims = reproduction.check(HONG, _final(FIXED), {"fixed": "g"}, SYNTHETIC)
    last = reproduction.markdown(HONG, claims).strip().splitlines()[-1]
    assert last.startswith("28 claims: held 1; not significant 2; reversed 2; not run 23")


def _plot(root: Path) -> Path:
    main(["plot", str(root), "--out", str(root / "figs"), "--format", "png", "--paper"])
    return root / "figs"


def test_plot_paper_writes_hongs_table_in_markdown_csv_and_latex_and_prints_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env = {"name": "synthetic", "dynamics": "fixed", "model": "known", "horizon": 30}
    for agent, level in (("mts", 0.1), ("umts", 0.1), ("cd_ucb", 0.6)):
        config = fake_config("paper/fixed", env, agent)
        write_fake_run(tmp_path / "paper/fixed" / agent, config, list(range(5)), level)
    figs = _plot(tmp_path)
    printed = capsys.readouterr().out
    text = (figs / "reproduction.md").read_text()
    csv = pd.read_csv(figs / "reproduction.csv")
    mean, se = csv.loc[csv["claim"] == "mTS beats CD-UCB", ["diff_mean", "diff_se"]].iloc[0]
    assert 0.01 <= se < 0.1, "two significant digits of the SE: three decimals"
    measured = f"{mean:+.3f} ± {se:.3f}"
    assert f"| 2 | mTS beats CD-UCB | synthetic | cum_regret | 30 | 5 | {measured} |" in text
    assert "| 3a | mTS beats CD-UCB |  | avg_reward |  |  |  |  |  |  | not run |  |" in text
    assert "round 30 (paper: 2000); 5 seeds (paper: 100)" in text
    assert text.strip().splitlines()[-1] in printed
    assert list(csv.columns) == list(reproduction.COLUMNS) and len(csv) == 28
    tex = (figs / "reproduction.tex").read_text()
    assert (
        measured.replace("±", r"$\pm$") in tex
        and r"mTS beats CD-UCB & synthetic & cum\_regret" in tex
    )
    assert not list(figs.glob("reproduction-*")), "no other paper's presets ran"


def test_plot_paper_writes_only_the_tables_of_the_papers_whose_presets_ran(
    tmp_path: Path,
) -> None:
    for k in (1, 5):
        env = {"name": "latent_ar", "order": k, "horizon": 40}
        for agent, level in (("larl_etc", 0.2), ("ar_ucb", 0.5)):
            config = fake_config("family/latent_ar", env, agent)
            write_fake_run(tmp_path / f"k{k}" / agent, config, [0, 1, 2], level)
    figs = _plot(tmp_path)
    assert sorted(p.name for p in figs.glob("reproduction*")) == [
        f"reproduction-trella2025.{suffix}" for suffix in ("csv", "md", "tex")
    ]
    table = pd.read_csv(figs / "reproduction-trella2025.csv")
    ran = table[table["verdict"] != "not run"]
    assert list(ran["figure"]) == ["k = 1", "k = 5"] and set(ran["n_pairs"]) == {3}


def test_an_agent_with_a_second_setting_is_read_at_its_defaults() -> None:
    """A further run of umTS with 50 particles beside the preset's: the claims read the
    run at umTS's defaults (100 particles), not "not run"."""
    final = _final(FIXED)
    final["agent.num_particles"] = np.where(final["agent.name"] == "umts", 100.0, np.nan)
    extra = final[final["agent.name"] == "umts"].assign(agent="umTS-50")
    extra["agent.num_particles"] = 50.0
    extra["cum_regret"] = 0.0  # would reverse every umTS claim if it were read
    claims = reproduction.check(HONG, pd.concat([final, extra]), {"fixed": "g"}, SYNTHETIC)
    table = claims[claims["figure"] == "2"].set_index("claim")
    assert table.loc["umTS beats CD-UCB", "verdict"] == "reversed"
    assert table.loc["umTS beats CD-UCB", "diff_mean"] == pytest.approx(-8.5)
