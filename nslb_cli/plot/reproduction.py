"""Whether the paper's claims held: ``reproduction.md`` of ``nslb plot --paper``.

Hong et al. (AISTATS 2021), section 5 (docs/design.md §5), claim that in every scenario mTS
and umTS beat every baseline "by a significant margin"; that with priors (Figure 3b) umTS
ends above mTS; that on MovieLens (Figure 4) umTS improves on mTS in the long term. nslb's
design adds that with a known model (Figures 2, 3a) the two perform alike. Each claim is one
row per pair of agents, checked on the final round of its preset's group (the group
``preset_groups`` draws) by the paired difference over the seeds
both agents ran, ``d_i = x_i(better) - x_i(worse)`` with the sign that makes "better"
positive (regret: lower is better):

* ``held``: ``mean(d) > z · SE(d)``, ``SE(d) = sd(d) / sqrt(n)``, ``z = 1.96`` (a 95 %
  interval above zero); for "alike", ``|mean(d)| <= z · SE(d)``;
* ``not significant``: the right sign, inside the interval (or, for "alike", outside it);
* ``reversed``: ``mean(d) < -z · SE(d)``;
* ``not run``: an agent or the preset has no results (or its agent ran under several labels).

No correction is made for the 28 comparisons: each row is read on its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from nslb_cli.plot import labels as lab

Z = 1.96  # two-sided 95 %
BASELINES = {
    "fixed": ("cd_ucb", "cd_ts", "exp4s"),
    "known": ("cd_ucb", "cd_ts", "exp4s"),
    "prior": ("cd_ucb", "cd_ts", "exp4s"),
    "movielens": ("cd_linucb", "cd_lints", "exp4s"),
}
FIGURE = {"fixed": "2", "known": "3a", "prior": "3b", "movielens": "4"}
METRIC = {"fixed": "cum_regret", "known": "avg_reward", "prior": "avg_reward",
          "movielens": "avg_reward"}  # fmt: skip
COLUMNS = ("figure", "claim", "metric", "round", "n_pairs", "diff_mean", "diff_se", "verdict")


@dataclass(frozen=True)
class Claim:
    """``better`` beats ``worse`` on its preset's metric (or, ``alike``, neither does)."""

    preset: str
    better: str
    worse: str
    alike: bool = False

    def text(self) -> str:
        first, second = (lab.display_name(a) for a in (self.better, self.worse))
        if self.alike:
            return f"{first} and {second} perform alike (known model)"
        return f"{first} beats {second}"


MODELS = {  # what each figure says of the two model-based samplers
    "fixed": Claim("fixed", "mts", "umts", alike=True),
    "known": Claim("known", "mts", "umts", alike=True),
    "prior": Claim("prior", "umts", "mts"),
    "movielens": Claim("movielens", "umts", "mts"),
}
CLAIMS = tuple(
    claim
    for preset, bases in BASELINES.items()
    for claim in [*(Claim(preset, a, b) for a in ("mts", "umts") for b in bases), MODELS[preset]]
)


def check(final: pd.DataFrame, groups: Mapping[str, str]) -> pd.DataFrame:
    """One row of ``COLUMNS`` per claim of ``CLAIMS``. ``final``: one row per
    (run, seed) at its last round (``finals``), with ``group``,
    ``agent`` (label), ``agent.name``, ``seed``, ``t`` and the metrics; ``groups``: the
    group of each preset."""
    rows = []
    for claim in CLAIMS:
        metric = METRIC[claim.preset]
        row: dict[str, object] = {"figure": FIGURE[claim.preset], "claim": claim.text()}
        row["metric"] = metric
        group = groups.get(claim.preset)
        of_group = final[final["group"] == group] if group is not None else final.iloc[:0]
        better, worse = (_values(of_group, name, metric) for name in (claim.better, claim.worse))
        if better is None or worse is None:
            rows.append({**row, "verdict": "not run"})
            continue
        pairs = pd.concat([better, worse], axis=1, join="inner", keys=["b", "w"]).dropna()
        sign = -1.0 if metric == "cum_regret" else 1.0
        d = sign * (pairs["b"] - pairs["w"]).to_numpy(np.float64)
        se = float(np.std(d, ddof=1) / np.sqrt(len(d))) if len(d) > 1 else float("nan")
        mean = float(d.mean()) if len(d) else float("nan")
        rounds = int(of_group["t"].max())
        values = {"round": rounds, "n_pairs": len(d), "diff_mean": mean, "diff_se": se}
        rows.append({**row, **values, "verdict": _verdict(mean, se, claim.alike)})
    return pd.DataFrame(rows, columns=list(COLUMNS)).astype({"round": "Int64", "n_pairs": "Int64"})


def _values(of_group: pd.DataFrame, agent: str, metric: str) -> pd.Series | None:
    """The final ``metric`` of each seed of ``agent`` in a group, indexed by seed; ``None``
    when it has no run there, or runs under several labels."""
    runs = of_group[of_group[lab.AGENT] == agent]
    if runs.empty or runs["agent"].nunique() != 1:
        return None
    return runs.set_index("seed")[metric]


def _verdict(mean: float, se: float, alike: bool) -> str:
    if not np.isfinite(se):
        return "not significant"
    inside = abs(mean) <= Z * se
    if alike:
        return "held" if inside else "not significant"
    if inside:
        return "not significant"
    return "held" if mean > 0 else "reversed"


def markdown(table: pd.DataFrame) -> str:
    """``reproduction.md``: the claims, the measured paired differences and the verdicts."""
    lines = [
        "# Reproduction of Hong et al. (2021), section 5",
        "",
        "Paired difference at the final round over the seeds both agents ran, signed so that "
        f"the claimed winner is positive (regret: lower is better); held: beyond {Z} SE "
        "(alike: within).",
        "",
        "| figure | claim | metric | round | seeds | difference (mean ± SE) | verdict |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in table.itertuples():
        if row.verdict == "not run":
            lines.append(f"| {row.figure} | {row.claim} | {row.metric} | | | | not run |")
            continue
        measured = f"{row.diff_mean:.4g} ± {row.diff_se:.2g}"
        lines.append(
            f"| {row.figure} | {row.claim} | {row.metric} | {row.round} | {row.n_pairs} | "
            f"{measured} | {row.verdict} |"
        )
    held = int((table["verdict"] == "held").sum())
    lines += ["", f"{held} of {len(table)} claims held."]
    return "\n".join(lines) + "\n"
