"""Statistics over seeds against values computed by hand on small constructed tables."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from nslb_cli.plot import aggregate
from nslb_cli.plot.aggregate import METRICS


def table(rows: list[tuple[str, int, int, float, float]], agents: list[str]) -> pd.DataFrame:
    """A labelled tidy table from (agent, seed, t, cum_regret, cum_reward) rows, one group."""
    frame = pd.DataFrame(rows, columns=["agent", "seed", "t", "cum_regret", "cum_reward"])
    frame["group"] = pd.Categorical(["g"] * len(frame), ordered=True)
    frame["agent"] = pd.Categorical(frame["agent"], categories=agents, ordered=True)
    frame["run"] = frame["agent"].cat.codes.astype(np.int32)
    frame["agent.name"] = frame["agent"].astype(str).str.lower()
    return frame


def test_mean_se_by_hand() -> None:
    mean, se, n = aggregate.mean_se([1.0, 2.0, 3.0, 4.0])
    # deviations ±1.5, ±0.5: sample variance (2.25+0.25)*2/3 = 5/3; SE = sqrt(5/3)/2
    assert (mean, n) == (2.5, 4)
    assert se == pytest.approx(math.sqrt(5 / 3) / 2)
    mean, se, n = aggregate.mean_se([7.0, float("nan")])
    assert (mean, n) == (7.0, 1) and math.isnan(se), "one seed: no standard error"


def test_per_round_mean_and_se_by_hand() -> None:
    # Agent A, round 1: 1, 2, 4 -> mean 7/3, sample variance 7/3, SE sqrt(7/3)/sqrt(3) = sqrt(7)/3.
    # Agent A, round 2: 3, 3, 6 -> mean 4, variance 3, SE 1. Agent B has one seed: SE undefined.
    rows = [
        ("A", 0, 1, 1.0, 0.0),
        ("A", 1, 1, 2.0, 0.0),
        ("A", 2, 1, 4.0, 0.0),
        ("A", 0, 2, 3.0, 0.0),
        ("A", 1, 2, 3.0, 0.0),
        ("A", 2, 2, 6.0, 0.0),
        ("B", 0, 1, 5.0, 0.0),
        ("B", 0, 2, 8.0, 0.0),
    ]
    stats = aggregate.per_round(table(rows, ["A", "B"]), METRICS["cum_regret"])
    stats = stats.set_index(["agent", "t"])
    assert stats.loc[("A", 1), "mean"] == pytest.approx(7 / 3)
    assert stats.loc[("A", 1), "se"] == pytest.approx(math.sqrt(7) / 3)
    assert stats.loc[("A", 2), "mean"] == pytest.approx(4.0)
    assert stats.loc[("A", 2), "se"] == pytest.approx(1.0)
    assert stats.loc[("A", 2), "n"] == 3
    assert stats.loc[("B", 2), "mean"] == 8.0 and math.isnan(stats.loc[("B", 2), "se"])


def test_running_mean_metric_divides_by_the_round() -> None:
    # cum_reward 2 at t=1 and 3 at t=2 (seed 0); 4 and 9 (seed 1): averages 2, 1.5 and 4, 4.5
    rows = [("A", 0, 1, 0, 2.0), ("A", 0, 2, 0, 3.0), ("A", 1, 1, 0, 4.0), ("A", 1, 2, 0, 9.0)]
    stats = aggregate.per_round(table(rows, ["A"]), METRICS["avg_reward"]).set_index("t")
    assert stats.loc[1, "mean"] == pytest.approx(3.0) and stats.loc[2, "mean"] == pytest.approx(3.0)
    # round 2: 1.5 and 4.5 -> sample sd sqrt(4.5), SE sqrt(4.5)/sqrt(2) = 1.5
    assert stats.loc[2, "se"] == pytest.approx(1.5)


def test_finals_take_the_last_round_present() -> None:
    rows = [("A", 0, t, 10.0 * t, t) for t in (1, 2, 3)] + [("A", 1, t, t, 0.0) for t in (1, 2, 3)]
    frame = table(rows, ["A"])
    final = aggregate.finals(frame).set_index("seed")
    assert list(final["t"]) == [3, 3] and final.loc[0, "cum_regret"] == 30.0
    assert final.loc[0, "avg_reward"] == pytest.approx(1.0)  # cum_reward 3 at t = 3
    restricted = aggregate.finals(frame[frame["t"] <= 2]).set_index("seed")
    assert restricted.loc[0, "cum_regret"] == 20.0 and restricted.loc[1, "cum_regret"] == 2.0


def final_rows() -> pd.DataFrame:
    # Reference R on seeds 0-3; agent B on seeds 0-4 (seed 4 has no partner); C on seeds 2-3.
    values = {"R": [10, 12, 9, 15], "B": [13, 14, 13, 16, 100], "C": [None, None, 8, 11]}
    rows = [
        (agent, seed, 5, float(v), 0.0)
        for agent, vs in values.items()
        for seed, v in enumerate(vs)
        if v is not None
    ]
    return aggregate.finals(table(rows, ["R", "B", "C"]))


def test_paired_difference_uses_shared_seeds_only() -> None:
    diffs = aggregate.paired_difference(final_rows(), "cum_regret", "R").set_index("agent")
    # B - R on seeds 0-3: 3, 2, 4, 1 -> mean 2.5, sample variance 5/3, SE sqrt(5/3)/2
    assert diffs.loc["B", "n_pairs"] == 4
    assert diffs.loc["B", "diff_mean"] == pytest.approx(2.5)
    assert diffs.loc["B", "diff_se"] == pytest.approx(math.sqrt(5 / 3) / 2)
    # C - R on seeds 2-3: -1, -4 -> mean -2.5, sd sqrt(4.5), SE 1.5
    assert diffs.loc["C", "diff_mean"] == pytest.approx(-2.5)
    assert diffs.loc["C", "diff_se"] == pytest.approx(1.5)
    assert diffs.loc["R", "diff_mean"] == 0.0


def test_summary_shows_seed_counts_and_paired_differences() -> None:
    summary = aggregate.summary(final_rows(), {"g": "R"}).set_index("agent")
    assert summary.loc["B", "n_seeds"] == 5 and summary.loc["C", "n_seeds"] == 2
    # B's five final regrets 13, 14, 13, 16, 100: mean 31.2
    assert summary.loc["B", "cum_regret_mean"] == pytest.approx(31.2)
    assert summary.loc["B", "diff_cum_regret_mean"] == pytest.approx(2.5)
    assert set(summary["reference"]) == {"R"}
    # avg_reward = cum_reward / t = 0 everywhere here
    assert summary.loc["R", "avg_reward_mean"] == 0.0


def test_summary_without_the_reference_has_no_differences() -> None:
    summary = aggregate.summary(final_rows(), {"g": None})
    assert set(summary["reference"]) == {""}
    assert summary["diff_cum_regret_mean"].isna().all()


def test_by_run_keys_groups_final_values_by_run_settings() -> None:
    final = final_rows()  # runs: R=0, B=1, C=2
    hue = pd.Series({0: "ref", 1: "x", 2: "x"})
    x = pd.Series({1: 10, 2: 20})
    points = aggregate.by_run_keys(final, {"agent": hue, "x": x}, "cum_regret")
    assert list(points["x"]) == [10, 20], "runs without a value (R) are left out"
    b = points.set_index("x").loc[10]
    assert b["n"] == 5 and b["mean"] == pytest.approx(31.2)


def test_by_run_keys_keeps_the_order_of_the_runs() -> None:
    final = final_rows()  # rows in run order R=0, B=1, C=2
    hue = pd.Series({2: "C", 0: "R", 1: "B"})  # legend order: C, R, B
    assert list(aggregate.by_run_keys(final, {"agent": hue}, "cum_regret")["agent"]) == [
        "C",
        "R",
        "B",
    ]


def test_interquartile_mean_by_hand() -> None:
    # 8 values sorted: 1 2 3 4 5 6 7 100 -> int(0.25 * 8) = 2 cut at each end: 3 4 5 6 -> 4.5
    assert aggregate.iqm([7, 100, 1, 5, 2, 6, 3, 4]) == 4.5
    # 5 values (NaN ignored): int(1.25) = 1 cut at each end: (2 + 3 + 4) / 3 = 3
    assert aggregate.iqm([50, 4, 3, float("nan"), 2, 1]) == 3.0
    assert aggregate.iqm([5.0, 1.0, 9.0]) == 5.0, "int(0.75) = 0: the plain mean"
    rng = np.random.default_rng(3)
    for n in (4, 10, 37, 100):
        values = rng.standard_normal(n)
        assert aggregate.iqm(values) == pytest.approx(stats.trim_mean(values, 0.25))


def test_bootstrap_interval_is_seeded_and_contains_the_mean() -> None:
    values = np.random.default_rng(7).exponential(10.0, 50)
    low, high = aggregate.bootstrap_ci(values)
    assert (low, high) == aggregate.bootstrap_ci(values), "identical run to run"
    assert (low, high) == aggregate.bootstrap_ci(values[::-1].copy()), "order does not matter"
    assert low < values.mean() < high
    se = values.std(ddof=1) / np.sqrt(len(values))
    assert 2.5 * se < high - low < 5.5 * se, "about ±1.96 SE"
    assert aggregate.bootstrap_ci([3.0, 3.0, 3.0]) == (3.0, 3.0)
    assert all(math.isnan(b) for b in aggregate.bootstrap_ci([1.0]))


def test_summary_with_bootstrap_intervals_and_per_seed_statistics() -> None:
    final = final_rows()
    # detections per seed: R has none; B 4, 6, 5, 9, 1; C 2 and (seed 3) none recorded
    detections = {("B", 0): 4, ("B", 1): 6, ("B", 2): 5, ("B", 3): 9, ("B", 4): 1, ("C", 2): 2}
    final["detections"] = [
        float(detections.get((str(a), s), np.nan))
        for a, s in zip(final["agent"], final["seed"], strict=True)
    ]
    summary = aggregate.summary(final, {"g": "R"}, stats=["detections"], ci="bootstrap")
    summary = summary.set_index("agent")
    # B: mean 5, sample variance (1 + 1 + 0 + 16 + 16) / 4 = 8.5, SE sqrt(8.5 / 5)
    assert summary.loc["B", "detections_mean"] == 5.0
    assert summary.loc["B", "detections_se"] == pytest.approx(math.sqrt(8.5 / 5))
    assert summary.loc["C", "detections_mean"] == 2.0 and math.isnan(
        summary.loc["C", "detections_se"]
    )
    assert math.isnan(summary.loc["R", "detections_mean"])
    for agent in ("B", "C"):
        low, high = summary.loc[agent, ["cum_regret_ci_low", "cum_regret_ci_high"]]
        assert low <= summary.loc[agent, "cum_regret_mean"] <= high
    low, high = summary.loc["B", ["diff_cum_regret_ci_low", "diff_cum_regret_ci_high"]]
    assert low < 2.5 < high, "B - R on shared seeds: 3, 2, 4, 1"
    again = aggregate.summary(final, {"g": "R"}, stats=["detections"], ci="bootstrap")
    pd.testing.assert_frame_equal(again.set_index("agent"), summary)
