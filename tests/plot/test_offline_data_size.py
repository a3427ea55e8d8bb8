"""What ``nslb plot`` makes of ``offline/data_size``: final regret against the logged rounds,
with paired differences to the known-model mTS (``env_sweeps``), and the claim table of the
premise (``reproduction-offline``), on results written by hand."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from nslb_cli.plot import aggregate, env_sweeps, paper, reproduction
from nslb_cli.plot import labels as lab
from nslb_cli.plot.reproduction import OFFLINE
from nslb_cli.plot.tidy import load
from tests.helpers.plotting import drawn
from tests.plot import hand

ENV = {"name": "synthetic", "dynamics": "markov", "horizon": 4}
SEEDS = (0, 1, 2)
LEARNED = {100: (40.0, 20.0), 1000: (20.0, 12.0), 10000: (10.0, 8.0), 100000: (5.0, 5.0)}
KNOWN = {"mts": 4.0, "umts": 4.5, "cd_ts": 30.0}  # final regret of seed 0; seed s adds s
# (CD-TS: 2 s), so every learned run is its seed-0 value + s: a constant difference to mTS's


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """offline/data_size's folders: mTS and umTS learned from each amount of logs (10^4, the
    default, unrecorded as the runs record it), the known model's mTS, umTS and CD-TS."""
    root = tmp_path_factory.mktemp("offline")
    for rounds, levels in LEARNED.items():
        env = {**ENV, "model": "learned"} | ({"offline_rounds": rounds} if rounds != 10000 else {})
        for agent, level in zip(("mts", "umts"), levels, strict=True):
            run = hand.config("offline/data_size", agent, env)
            hand.write_run(root / f"{agent}/{rounds}", run, {s: (level + s, 1.0) for s in SEEDS})
    for agent, level in KNOWN.items():
        run = hand.config("offline/data_size", agent, {**ENV, "model": "known"})
        step = 2 if agent == "cd_ts" else 1
        hand.write_run(root / f"{agent}/known", run, {s: (level + step * s, 1.0) for s in SEEDS})
    return root


def _labelled(root: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    loaded = load(root)
    frame, runs = aggregate.labelled(loaded.frame, loaded.runs)
    return aggregate.finals(frame), runs


def test_a_setting_added_later_is_its_default_where_a_run_does_not_record_it() -> None:
    runs = pd.DataFrame({"env.name": ["synthetic"] * 3, "env.offline_rounds": [100, np.nan, 7]})
    assert list(lab.with_later_defaults(runs)["env.offline_rounds"]) == [100, 10000, 7]
    unrecorded = pd.DataFrame({"env.name": ["synthetic"], "env.sigma": [0.5]})
    assert lab.with_later_defaults(unrecorded).equals(unrecorded), "no run records one"


def test_regret_against_the_logged_rounds_with_the_known_model_beside(tree: Path) -> None:
    final, runs = _labelled(tree)
    (found,) = env_sweeps.env_sweeps(final, runs, aggregate.DEFAULT_REFERENCE)
    assert (found.setting, found.lines, found.others) == ("env.offline_rounds", "model=learned",
                                                          "model=known")  # fmt: skip
    points = found.points(final).set_index(["agent", "x"])
    for rounds, (mts, umts) in LEARNED.items():
        assert points.loc[("mTS (model=learned)", rounds), "mean"] == mts + 1, "seeds 0-2"
        assert points.loc[("umTS (model=learned)", rounds), "mean"] == umts + 1
    references = found.references(final).set_index("agent")["mean"]
    assert references.to_dict() == {"CD-TS (model=known)": 32.0, "mTS (model=known)": 5.0,
                                    "umTS (model=known)": 5.5}  # fmt: skip


def test_paired_differences_to_the_known_models_mts_seed_by_seed(tree: Path) -> None:
    final, runs = _labelled(tree)
    (found,) = env_sweeps.env_sweeps(final, runs, aggregate.DEFAULT_REFERENCE)
    assert found.reference == "mTS (model=known)"
    paired = found.paired.set_index(["agent", "x"])
    for rounds, (mts, _) in LEARNED.items():
        row = paired.loc[("mTS (model=learned)", rounds)]
        assert (row["mean"], row["se"], row["n"]) == (mts - 4.0, 0.0, 3), "the same every seed"
    others = found.paired_references.set_index("agent")
    assert list(others.index) == ["CD-TS (model=known)", "umTS (model=known)"], "not mTS itself"
    assert others.loc["CD-TS (model=known)", "mean"] == 27.0  # 26 + s
    assert others.loc["CD-TS (model=known)", "se"] == pytest.approx(1 / np.sqrt(3))
    assert not env_sweeps.env_sweeps(final, runs, "")[0].reference, "--reference none"


def test_each_group_has_its_key_of_the_premise() -> None:
    runs = pd.DataFrame({
        "name": ["offline/data_size"] * 3 + ["smoke/offline/data_size"],
        "env.model": ["learned", "known", "learned", "learned"],
        "env.offline_rounds": [100, 10000, 10000, 100000],
    })  # fmt: skip
    keys = [paper.preset_key(row) for _, row in runs.iterrows()]
    assert keys == ["data_size/n100", "data_size/known", "data_size/n10000", "data_size/n100000"]


MTS_FEW = [30.0, 34.0, 28.0, 36.0, 31.0, 33.0]  # seeds 0-5
MTS_MANY = [6.0, 7.0, 5.0, 8.0, 6.0, 7.0]
VALUES = {  # group -> agent -> final regret of seeds 0-5
    "few": {"mts": MTS_FEW, "umts": [20.0, 25.0, 19.0, 27.0, 22.0, 24.0]},
    "many": {"mts": MTS_MANY, "umts": [6.2, 7.1, 5.1, 8.2, 6.1, 7.0]},
    "known": {"mts": [6.1, 6.9, 5.2, 7.8, 6.0, 7.1]},
}
GROUPS = {"data_size/n100": "few", "data_size/n100000": "many", "data_size/known": "known"}


def _final(values: dict[str, dict[str, list[float]]]) -> pd.DataFrame:
    rows = [
        {"group": group, "agent": agent, "agent.name": agent, "seed": s, "t": 2000,
         "cum_regret": value}
        for group, agents in values.items()
        for agent, of_agent in agents.items()
        for s, value in enumerate(of_agent)
    ]  # fmt: skip
    return pd.DataFrame(rows)


def _claims(values: dict[str, dict[str, list[float]]]) -> pd.DataFrame:
    runs = pd.DataFrame({"group": list(values), "env.name": ["synthetic"] * len(values)})
    return reproduction.check(OFFLINE, _final(values), GROUPS, runs).set_index("claim")


def test_the_premises_claims_are_read_across_the_amounts_of_logs_by_seed() -> None:
    claims = _claims(VALUES)
    falls = claims.loc["mTS (10⁵ logged rounds) beats mTS (10² logged rounds)"]
    d = np.array(MTS_FEW) - np.array(MTS_MANY)
    assert falls["diff_mean"] == pytest.approx(d.mean())
    assert falls["p_value"] == pytest.approx(stats.ttest_1samp(d, 0.0).pvalue)
    alike = claims.loc["mTS (10⁵ logged rounds) and mTS (known model) perform alike"]
    d = np.array(VALUES["known"]["mts"]) - np.array(MTS_MANY)
    margin = 0.1 * np.mean(MTS_MANY)
    tost = max(stats.ttest_1samp(d, -margin, alternative="greater").pvalue,
               stats.ttest_1samp(d, margin, alternative="less").pvalue)  # fmt: skip
    assert alike["p_value"] == pytest.approx(tost)
    gains = claims.loc[
        "umTS's gain over mTS is larger at 10² logged rounds than at 10⁵ logged rounds"
    ]
    few = np.array(MTS_FEW) - np.array(VALUES["few"]["umts"])
    many = np.array(MTS_MANY) - np.array(VALUES["many"]["umts"])
    assert gains["diff_mean"] == pytest.approx((few - many).mean())
    assert gains["p_value"] == pytest.approx(stats.ttest_1samp(few - many, 0.0).pvalue)
    assert claims.loc["umTS beats mTS", "figure"] == "10² logged rounds"
    assert set(claims["verdict"]) == {"held"}
    assert (claims["departures"] == "6 seeds (paper: 20)").all()


def test_a_premise_the_numbers_deny_is_reversed_or_not_significant() -> None:
    worse = {**VALUES, "few": {"mts": MTS_FEW, "umts": [x + 5 for x in MTS_FEW]}}
    worse["known"] = {"mts": [3.0, 9.0, 1.0, 12.0, 2.0, 10.0]}  # equal mean 6.2, sd 4.6
    claims = _claims(worse)
    assert claims.loc["umTS beats mTS", "verdict"] == "reversed"
    gains = "umTS's gain over mTS is larger at 10² logged rounds than at 10⁵ logged rounds"
    assert claims.loc[gains, "verdict"] == "reversed"
    alike = "mTS (10⁵ logged rounds) and mTS (known model) perform alike"
    assert claims.loc[alike, "verdict"] == "not significant", "no difference is not alike"
    del worse["known"]
    assert _claims(worse).loc[alike, "verdict"] == "not run"


def test_plot_paper_draws_the_logged_rounds_on_a_log_axis_and_tests_the_premise(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    figures = drawn(monkeypatch, tree, "--out", tmp_path, "--paper", "--metric", "cum_regret")
    capsys.readouterr()
    for stem in ("sweep", "diff-sweep"):
        axes = figures[f"offline_data_size-{stem}-offline_rounds"].axes[0]
        assert axes.get_xscale() == "log" and axes.get_xlabel() == "env.offline_rounds"
        ticks = [label.get_text() for label in axes.get_xticklabels()]
        assert ticks == ["100", "1000", "10000", "100000"], stem
        lines = [bars.lines[0] for bars in axes.containers]  # errorbars: mTS, umTS learned
        assert [list(line.get_xdata()) for line in lines] == [list(LEARNED)] * 2, stem
    axes = figures["offline_data_size-diff-sweep-offline_rounds"].axes[0]
    assert axes.get_ylabel().endswith("to mTS (model=known)")
    table = pd.read_csv(tmp_path / "reproduction-offline.csv").set_index("claim")
    assert len(table) == 4 and set(table["n_pairs"]) == {3} and set(table["round"]) == {4}
    falls = table.loc["mTS (10⁵ logged rounds) beats mTS (10² logged rounds)"]
    assert (falls["diff_mean"], falls["diff_se"]) == (35.0, 0.0), "40 + s against 5 + s"
    assert (tmp_path / "reproduction-offline.tex").is_file()
