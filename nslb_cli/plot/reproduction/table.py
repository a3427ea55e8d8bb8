"""A paper's claim table: each claim's paired difference at the final round, its test, Holm's
adjustment over the paper's claims, the verdict, and where the run departs from the paper.

Each claim is read on the seeds both agents ran in its preset's group (``groups``), as
``d_i = x_i(better) - x_i(worse)`` signed so that the claim is positive (regret and estimation
error: lower is better):

* ``beats``: a two-sided t test of ``mean(d) = 0`` (``n - 1`` degrees of freedom, SE
  ``sd(d) / sqrt(n)``); ``held`` when significant after Holm with the claimed sign,
  ``reversed`` with the other;
* ``alike``: two one-sided t tests (TOST) of ``|mean(d)| >= δ`` on final cumulative regret,
  ``δ = ALIKE_MARGIN`` times the first-named agent's mean final regret on those seeds: a scale
  with a natural zero (reward has none), fixed before any result was seen; ``held`` when both
  reject after Holm;
* ``shrinks``: the per-seed statistic at the longest exploration against the shortest, ``beats``'s
  test;
* a claim ``against`` another preset reads ``worse`` there, paired by seed (the presets' seeds
  are the same worlds); ``gains more``: ``d_i`` is the difference of the two presets' paired
  differences of ``better`` and ``worse``, ``beats``'s test (a difference of differences);
* ``not significant`` otherwise, ``not run`` when an agent or the preset has no results.

Holm's step-down runs over the claims of one paper that ran (family-wise ``ALPHA``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from nslb_cli.plot import labels as lab
from nslb_cli.plot.aggregate import mean_se
from nslb_cli.plot.identity import DATA, dataset
from nslb_cli.plot.latex import tabular
from nslb_cli.plot.reproduction.claims import ALIKE, GAINS, SHRINKS, Claim, Paper, Setting
from nslb_cli.plot.tables import format_pm, format_value, grid

ALPHA = 0.05  # family-wise, over one paper's claims
ALIKE_MARGIN = 0.10  # δ: a tenth of the first-named agent's final regret
LOWER_IS_BETTER = frozenset({"cum_regret", "avg_regret", "regret", "transition_error"})
EXPLORATION = "exploration"  # SL-EC's T0, per seed in seed=K.json
HELD, NOT_SIGNIFICANT, REVERSED, NOT_RUN = "held", "not significant", "reversed", "not run"
VERDICTS = (HELD, NOT_SIGNIFICANT, REVERSED, NOT_RUN)
COLUMNS = ("figure", "claim", "metric", "data", "round", "n_pairs", "diff_mean", "diff_se",
           "test", "p_value", "p_holm", "verdict", "departures")  # fmt: skip
HEADER = ("figure", "claim", "data", "metric", "round", "seeds", "difference (mean ± SE)",
          "test", "p", "Holm p", "verdict", "departs from the paper")  # fmt: skip


def present(paper: Paper, groups: Mapping[str, str]) -> bool:
    """Whether any preset of ``paper`` has a group in the results."""
    return any(preset in groups for preset in paper.settings)


def check(
    paper: Paper, final: pd.DataFrame, groups: Mapping[str, str], runs: pd.DataFrame
) -> pd.DataFrame:
    """One row of ``COLUMNS`` per claim of ``paper``. ``final``: one row per (run, seed) at its
    last round, with ``group``, ``agent`` (label), ``agent.name``, ``seed``, ``t``, the metrics
    and the per-seed statistics; ``groups``: each preset's group; ``runs``: the labelled runs."""
    rows = [_row(paper, claim, final, groups, runs) for claim in paper.claims]
    table = pd.DataFrame(rows, columns=list(COLUMNS))
    table["p_holm"] = holm(table["p_value"].to_numpy(np.float64))
    table["verdict"] = [
        _verdict(row.verdict, row.diff_mean, row.p_holm, row.test) for row in table.itertuples()
    ]
    return table.astype({"round": "Int64", "n_pairs": "Int64"})


def _row(
    paper: Paper, claim: Claim, final: pd.DataFrame, groups: Mapping[str, str], runs: pd.DataFrame
) -> dict[str, object]:
    """``claim``'s row before Holm's adjustment: ``verdict`` is ``not run`` or empty."""
    setting, metric = paper.settings[claim.preset], paper.metric(claim)
    text = paper.text(claim)
    row: dict[str, object] = {"figure": setting.figure, "claim": text, "metric": metric}
    presets = (claim.preset, claim.against) if claim.against else (claim.preset,)
    found = [groups.get(preset) for preset in presets]
    frames = [final[final["group"] == g] if g is not None else final.iloc[:0] for g in found]
    measure = MEASURES.get(claim.kind, _paired)
    measured = measure(frames, claim, metric) if all(metric in f for f in frames) else None
    if measured is None:
        return {**row, "verdict": NOT_RUN}
    d, margin, words = measured
    mean, se, _ = mean_se(d)
    rounds, data = int(frames[0]["t"].max()), _data(runs, found[0])
    test = f"TOST ±{format_value(margin, se)}" if claim.kind == ALIKE else "t"
    return {
        **row,
        "claim": f"{text}{words}",
        "data": data,
        "round": rounds,
        "n_pairs": len(d),
        "diff_mean": mean,
        "diff_se": se,
        "test": test,
        "p_value": p_value(d, margin if claim.kind == ALIKE else None),
        "verdict": "",
        "departures": "; ".join(departures(setting, data, rounds, len(d))),
    }


Measured = tuple[np.ndarray, float, str]  # d, the margin (alike; else NaN), words for the claim


def _paired(frames: Sequence[pd.DataFrame], claim: Claim, metric: str) -> Measured | None:
    """``d`` of a ``beats`` or ``alike`` claim on ``metric``, over the seeds both agents ran,
    ``better`` read in the first of ``frames`` (the preset's rows), ``worse`` in the last
    (``against``'s, else the same); for ``alike`` the margin ``ALIKE_MARGIN`` times
    ``better``'s mean there."""
    better = _values(frames[0], claim.better, metric)
    worse = _values(frames[-1], claim.worse, metric)
    if better is None or worse is None:
        return None
    pairs = pd.concat([better, worse], axis=1, join="inner", keys=["b", "w"]).dropna()
    sign = -1.0 if metric in LOWER_IS_BETTER else 1.0
    d = sign * (pairs["b"] - pairs["w"]).to_numpy(np.float64)
    margin = ALIKE_MARGIN * float(pairs["b"].mean()) if claim.kind == ALIKE else math.nan
    return d, margin, ""


def _gaining(frames: Sequence[pd.DataFrame], claim: Claim, metric: str) -> Measured | None:
    """``d`` of a ``gains more`` claim: ``better``'s gain over ``worse`` (the paired
    difference signed so that a gain is positive) in the preset's rows (``frames[0]``) minus
    its gain in ``against``'s (``frames[1]``), over the seeds both agents ran in both."""
    if len(frames) != 2:
        return None
    found = [_values(f, name, metric) for f in frames for name in (claim.better, claim.worse)]
    if any(values is None for values in found):
        return None
    keys = ["b_here", "w_here", "b_there", "w_there"]
    pairs = pd.concat(found, axis=1, join="inner", keys=keys).dropna()
    sign = -1.0 if metric in LOWER_IS_BETTER else 1.0
    here, there = pairs["b_here"] - pairs["w_here"], pairs["b_there"] - pairs["w_there"]
    return sign * (here - there).to_numpy(np.float64), math.nan, ""


def _shrinking(frames: Sequence[pd.DataFrame], claim: Claim, metric: str) -> Measured | None:
    """``d`` of a ``shrinks`` claim: ``metric`` at the shortest exploration minus at the
    longest, paired by seed, over the labels of ``claim.better`` (an ``agent.exploration``
    sweep) in the preset's rows (``frames[0]``); ``None`` without two explorations."""
    of_group = frames[0]
    runs = of_group[of_group[lab.AGENT] == claim.better]
    if EXPLORATION not in runs or runs.empty:
        return None
    explored = runs.groupby("agent", observed=True)[EXPLORATION].mean().dropna().sort_values()
    if len(explored) < 2 or explored.iloc[0] == explored.iloc[-1]:
        return None
    short, long = (
        runs[runs["agent"] == label].set_index("seed")[metric]
        for label in (explored.index[0], explored.index[-1])
    )
    pairs = pd.concat([short, long], axis=1, join="inner", keys=["s", "l"]).dropna()
    d = (pairs["s"] - pairs["l"]).to_numpy(np.float64)
    words = f" (exploration {explored.iloc[0]:.0f} against {explored.iloc[-1]:.0f} rounds)"
    return d, math.nan, words


MEASURES = {SHRINKS: _shrinking, GAINS: _gaining}
"""How each kind of claim other than ``beats`` and ``alike`` (``_paired``) measures ``d``."""


def _values(of_group: pd.DataFrame, agent: str, metric: str) -> pd.Series | None:
    """The final ``metric`` of each seed of ``agent`` in a group, indexed by seed: of several
    labels (settings), the one at the agent's defaults; ``None`` when it has no run there, or
    several labels and none at its defaults."""
    runs = of_group[of_group[lab.AGENT] == agent]
    if runs["agent"].nunique() > 1:
        settings = lab.agent_settings(runs.columns)
        at_defaults = [
            label
            for label, rows in runs.groupby("agent", observed=True)
            if not lab.non_default(rows.iloc[0], settings)
        ]
        runs = runs[runs["agent"].isin(at_defaults)]
    if runs.empty or runs["agent"].nunique() != 1:
        return None
    return runs.set_index("seed")[metric]


def p_value(d: np.ndarray, margin: float | None = None) -> float:
    """The p-value of the paired differences ``d`` under the t distribution with ``n - 1``
    degrees of freedom: two-sided against ``mean(d) = 0``, or with a ``margin`` the TOST's (the
    larger of the one-sided p-values against ``mean(d) <= -margin`` and ``mean(d) >= margin``).
    NaN with fewer than two differences or no positive margin."""
    mean, se, _ = mean_se(d)
    if not math.isfinite(se) or (margin is not None and not margin > 0):
        return math.nan
    if se == 0:  # every seed the same difference
        return float(abs(mean) >= margin) if margin is not None else float(mean == 0)
    df = len(d) - 1
    if margin is None:
        return float(2 * stats.t.sf(abs(mean) / se, df))
    return float(max(stats.t.sf((mean + margin) / se, df), stats.t.cdf((mean - margin) / se, df)))


def holm(p: Sequence[float] | np.ndarray) -> list[float]:
    """Holm's step-down adjustment of the finite p-values of ``p`` (NaN: not tested, left
    NaN): the i-th smallest of m times ``m - i + 1``, never below the one before, at most 1."""
    tested = sorted((value, i) for i, value in enumerate(p) if math.isfinite(value))
    adjusted, running = [math.nan] * len(p), 0.0
    for rank, (value, i) in enumerate(tested):
        running = max(running, min(1.0, (len(tested) - rank) * value))
        adjusted[i] = running
    return adjusted


def _verdict(verdict: str, mean: float, p_holm: float, test: str) -> str:
    """``held``, ``reversed`` or ``not significant`` at ``ALPHA`` after Holm; ``not run``."""
    if verdict == NOT_RUN:
        return NOT_RUN
    if not p_holm <= ALPHA:
        return NOT_SIGNIFICANT
    return HELD if test.startswith("TOST") or mean > 0 else REVERSED


def departures(setting: Setting, data: str, rounds: int, seeds: int) -> list[str]:
    """Where a claim's run departs from the paper's: its data, its horizon, fewer seeds."""
    found = []
    if setting.data and data.split(" [")[0] != setting.data:
        found.append(f"data {data} (paper: {setting.data})")
    if setting.horizon and rounds != setting.horizon:
        found.append(f"round {rounds} (paper: {setting.horizon})")
    if setting.seeds and seeds < setting.seeds:
        found.append(f"{seeds} seed{'s' if seeds > 1 else ''} (paper: {setting.seeds})")
    return found


def _data(runs: pd.DataFrame, group: str | None) -> str:
    """What a group simulated, for people: its release or folder, else its environment."""
    run = runs[runs[lab.GROUP] == group].iloc[0]
    if DATA in run and not pd.isna(run[DATA]):
        return dataset(run, short=True)
    return lab.format_value(run["env.name"]) if "env.name" in run else ""


def cells(table: pd.DataFrame) -> list[list[str]]:
    """The text of each row under ``HEADER``, the same for Markdown and LaTeX: every
    mean ± SE by ``format_pm``."""
    rows = []
    for row in table.itertuples():
        if row.verdict == NOT_RUN:
            rows.append([row.figure, row.claim, "", row.metric, *[""] * 6, NOT_RUN, ""])
            continue
        rows.append([
            row.figure, row.claim, row.data, row.metric, str(row.round), str(row.n_pairs),
            format_pm(row.diff_mean, row.diff_se, signed=True), row.test,
            _p(row.p_value), _p(row.p_holm), row.verdict, row.departures,
        ])  # fmt: skip
    return rows


def _p(p: float) -> str:
    """A p-value to two significant digits; below 10⁻⁴ as a bound."""
    if not math.isfinite(p):
        return "–"
    return "< 0.0001" if p < 1e-4 else f"{p:.2g}"


def summary(table: pd.DataFrame) -> str:
    """The verdicts counted by kind, and over how many claims Holm's adjustment ran."""
    counts = table["verdict"].value_counts()
    kinds = "; ".join(f"{kind} {int(counts.get(kind, 0))}" for kind in VERDICTS)
    tested = int(table["p_value"].notna().sum())
    return (
        f"{len(table)} claims: {kinds} (Holm's step-down over the {tested} tested, "
        f"family-wise α = {ALPHA})."
    )


ALIGN = "llllrrrlrrll"


def markdown(paper: Paper, table: pd.DataFrame) -> str:
    """The claim table of ``paper`` as Markdown: how each claim was tested, the rows, the
    verdicts counted by kind."""
    tost = any(claim.kind == ALIKE for claim in paper.claims)
    lines = [
        f"# Reproduction of {paper.title}",
        "",
        "Each claim is read at the final round on the seeds both agents ran: the paired "
        "difference, signed so that the claim is positive (regret and estimation error: lower "
        "is better), mean ± SE. t: a two-sided t test of a zero mean difference (n − 1 degrees "
        "of freedom). "
        + (
            "TOST ±δ: two one-sided t tests that the difference lies within ±δ, on final "
            f"cumulative regret, δ = {ALIKE_MARGIN:.0%} of the first-named agent's mean final "
            "regret on those seeds (a scale with a natural zero, fixed before any result was "
            "seen). "
            if tost
            else ""
        )
        + "Holm p: Holm's step-down adjustment over this paper's tested claims; a claim held "
        f"(is reversed) when its Holm p is at most {ALPHA} with the claimed (the other) sign; "
        "not significant is evidence neither way at that level.",
        "",
        *([paper.notes, ""] if paper.notes else []),
        *grid(HEADER, cells(table), ALIGN),
        "",
        summary(table),
    ]
    return "\n".join(lines) + "\n"


def latex(table: pd.DataFrame) -> str:
    """The claim table as a booktabs ``tabular`` of the Markdown's cells."""
    return tabular(HEADER, cells(table), ALIGN)
