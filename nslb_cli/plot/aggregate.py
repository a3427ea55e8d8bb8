"""Statistics over seeds: mean ± standard error (``ddof=1``; NaN for one seed) per round,
final values, the interquartile mean, seeded BCa bootstrap intervals and paired differences
(seed by seed over the seeds both agents have, docs/design.md §2).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from nslb_cli.plot import labels as lab
from nslb_cli.store.results import seed_ranges

KEYS = ["group", "agent"]


@dataclass(frozen=True)
class Metric:
    """A per-round quantity: a CSV column, or its running mean over rounds 1 … t."""

    column: str
    label: str  # axis label, with units
    running_mean: bool = False

    def values(self, frame: pd.DataFrame) -> pd.Series:
        """The metric on every row of ``frame`` (needs ``t`` and ``column``)."""
        values = frame[self.column]
        return values / frame["t"] if self.running_mean else values


METRICS = {
    "cum_regret": Metric("cum_regret", "cumulative regret"),
    "avg_reward": Metric("cum_reward", "average reward (running mean)", running_mean=True),
    "avg_regret": Metric("cum_regret", "average regret per round (running mean)", True),
    "cum_reward": Metric("cum_reward", "cumulative reward"),
    "reward": Metric("reward", "reward in round t"),
    "regret": Metric("regret", "regret in round t"),
    "p_true_state": Metric("p_true_state", "posterior mass on the true state"),
}
SUMMARY_METRICS = ("cum_regret", "avg_reward")  # what the summary tables report
DEFAULT_METRICS = ("cum_regret", "avg_reward")  # the curves drawn, the columns loaded
# of paired differences: the first of these with a run in the group, where exactly one is
# (the filter oracle: the switching-latent papers' reference; mTS: the paper's)
DEFAULT_REFERENCE = ("filter_oracle", "mts")
PAIRED_METRIC = "cum_regret"
CI_METHODS = ("se", "bootstrap")  # --ci: mean ± SE only, or a bootstrap interval beside it
CONFIDENCE = 0.95
BOOTSTRAP_RESAMPLES = 9999
BOOTSTRAP_SEED = 0  # every interval is drawn from this seed: identical run to run
IQM_CUT = 0.25  # the interquartile mean drops this share of the seeds at each end
TRANSIENT = 0.01  # running means leave out this share of the rounds, mostly noise, at the start
COST = "seconds_per_1k_seed_rounds"  # per seed: 1000 x its share of its batch's simulation
# seconds (provenance.jsonl) / its rounds; per agent, in the summary: the mean over its seeds


def labelled(
    frame: pd.DataFrame,
    runs: pd.DataFrame,
    rename: Mapping[str, str] | None = None,
    order: Sequence[str] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Add ``group``, ``agent`` (ordered categoricals) and the agent's name to the rows of
    ``frame``; ``runs`` (indexed by ``run``) returned in legend order with both, and with the
    settings added later that some runs record filled in (``labels.with_later_defaults``)."""
    runs = lab.order_runs(lab.with_later_defaults(runs), order)
    runs = runs.assign(group=lab.group_titles(runs))
    runs = runs.assign(agent=lab.agent_labels(runs, ["group"], rename))
    codes = np.full(int(runs.index.max()) + 1 if len(runs) else 0, -1, dtype=np.int32)
    rows = frame.copy(deep=False)  # the new columns only: the values are shared
    run = rows["run"].to_numpy()
    for column in (*KEYS, lab.AGENT):
        values = runs[column].map(str) if column == lab.AGENT else runs[column]
        categories = list(dict.fromkeys(values))
        codes[runs.index] = [categories.index(value) for value in values]
        ordered = column in KEYS
        rows[column] = pd.Categorical.from_codes(codes[run], categories, ordered=ordered)
    return rows, runs


def mean_se(values: np.ndarray | pd.Series) -> tuple[float, float, int]:
    """Mean, standard error (ddof=1; NaN for one value) and count, NaNs ignored."""
    array = np.asarray(values, dtype=np.float64)
    array = array[~np.isnan(array)]
    n = len(array)
    if n == 0:
        return float("nan"), float("nan"), 0
    if n == 1:
        return float(array[0]), float("nan"), 1
    if (array == array[0]).all():  # no spread: exactly 0, not a rounding residue
        return float(array[0]), 0.0, n
    return float(array.mean()), float(array.std(ddof=1) / np.sqrt(n)), n


def iqm(values: np.ndarray | pd.Series) -> float:
    """The interquartile mean, NaNs ignored: ``int(0.25 n)`` cut from each end (scipy's
    ``trim_mean(values, 0.25)``, rliable's IQM)."""
    array = np.sort(np.asarray(values, dtype=np.float64))
    array = array[~np.isnan(array)]
    cut = int(IQM_CUT * len(array))
    return float(array[cut : len(array) - cut].mean()) if len(array) else float("nan")


def bootstrap_ci(values: np.ndarray | pd.Series) -> tuple[float, float]:
    """The 95 % BCa bootstrap interval of the mean, NaNs ignored, from a generator seeded with
    ``BOOTSTRAP_SEED`` (any order, same interval); NaN for fewer than two values."""
    array = np.sort(np.asarray(values, dtype=np.float64))  # sorted: any order, same interval
    array = array[~np.isnan(array)]
    if len(array) < 2:
        return float("nan"), float("nan")
    if (array == array[0]).all():
        return float(array[0]), float(array[0])
    from scipy import stats  # imported when asked for (--ci bootstrap)

    bounds = []
    for method in ("BCa", "percentile"):  # BCa is undefined for some skewed small samples
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = stats.bootstrap(
                (array,),
                np.mean,
                confidence_level=CONFIDENCE,
                n_resamples=BOOTSTRAP_RESAMPLES,
                method=method,
                vectorized=True,
                rng=np.random.default_rng(BOOTSTRAP_SEED),
            )
        bounds = [float(result.confidence_interval.low), float(result.confidence_interval.high)]
        if np.isfinite(bounds).all():
            break
    return bounds[0], bounds[1]


def per_round(frame: pd.DataFrame, metric: Metric) -> pd.DataFrame:
    """Mean, SE and seed count (``n``: seeds with a value) of ``metric`` per group, agent and
    round: columns ``group, agent, t, mean, se, n``."""
    values = metric.values(frame).to_numpy(np.float64)
    group = frame["group"].cat.codes.to_numpy(np.int64)
    agent = frame["agent"].cat.codes.to_numpy(np.int64)
    t = frame["t"].to_numpy(np.int64)
    n_agents, first = len(frame["agent"].cat.categories), int(t.min(initial=1))
    span = int(t.max(initial=first)) - first + 1
    cell = (group * n_agents + agent) * span + (t - first)
    size = (len(frame["group"].cat.categories) * n_agents) * span
    present = np.bincount(cell, minlength=size) > 0
    valid = ~np.isnan(values)
    count = np.bincount(cell, weights=valid, minlength=size)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.bincount(cell, weights=np.where(valid, values, 0.0), minlength=size) / count
        deviation = np.where(valid, values - mean[cell], 0.0)
        squares = np.bincount(cell, weights=deviation**2, minlength=size)
        se = np.sqrt(squares / (count - 1)) / np.sqrt(count)
    se[count < 2] = np.nan
    (cells,) = np.nonzero(present)
    pair, offset = np.divmod(cells, span)
    return pd.DataFrame(
        {
            "group": pd.Categorical.from_codes(pair // n_agents, dtype=frame["group"].dtype),
            "agent": pd.Categorical.from_codes(pair % n_agents, dtype=frame["agent"].dtype),
            "t": (offset + first).astype(np.int32),
            "mean": mean[cells],
            "se": se[cells],
            "n": count[cells].astype(np.int64),
        }
    )


def paired_per_round(
    frame: pd.DataFrame, metric: Metric, references: Mapping[str, str | None]
) -> pd.DataFrame:
    """Per group, agent and round: the mean, paired SE and count (``n``: seeds both ran) of
    ``metric`` minus the group's reference agent's on the same seed and round (columns of
    ``per_round``); the reference itself and groups without one are left out."""
    groups, agents = frame["group"].cat.categories, list(frame["agent"].cat.categories)
    chosen = [references.get(str(group)) for group in groups]
    reference_of = np.array([agents.index(r) if r in agents else -2 for r in chosen], np.int64)
    group = frame["group"].cat.codes.to_numpy(np.int64)
    agent = frame["agent"].cat.codes.to_numpy(np.int64)
    is_reference = agent == reference_of[group] if len(groups) else np.zeros(0, bool)
    seed_code = pd.factorize(frame["seed"])[0].astype(np.int64)
    t = frame["t"].to_numpy(np.int64)
    span = int(t.max(initial=0)) + 1
    key = (group * (int(seed_code.max(initial=0)) + 1) + seed_code) * span + t
    where = pd.Index(key[is_reference]).get_indexer(key)  # the reference's row, or -1
    paired = (where >= 0) & ~is_reference
    column = frame[metric.column].to_numpy(np.float64)
    base = column[is_reference][where[paired]]
    differences = pd.DataFrame(
        {
            "group": pd.Categorical.from_codes(group[paired], dtype=frame["group"].dtype),
            "agent": pd.Categorical.from_codes(agent[paired], dtype=frame["agent"].dtype),
            "t": t[paired],
            metric.column: column[paired] - base,
        }
    )
    return per_round(differences, metric)


def change_points(frame: pd.DataFrame) -> dict[str, tuple[int, ...]]:
    """Per group, the rounds at which the true state (``state``) changes on every seed of
    every run alike: the world's deterministic change points (``dynamics=fixed``,
    ``piecewise``); none where they differ between seeds (Markov changes) or where the group
    has a single seed, which cannot tell them apart. With thinned rounds (``run.every``) a
    change counts only where both its rounds were kept, so a round drawn is the change's own."""
    if not _in_blocks(frame):
        frame = frame.sort_values(["run", "seed", "t"], kind="stable")
    run, seed, t = (frame[c].to_numpy(np.int64) for c in ("run", "seed", "t"))
    group, state = frame["group"].cat.codes.to_numpy(np.int64), frame["state"].to_numpy()
    same = (run[1:] == run[:-1]) & (seed[1:] == seed[:-1])
    starts = np.append(True, ~same)  # the first row of each (run, seed)
    changed = np.append(False, same & (state[1:] != state[:-1]) & (t[1:] == t[:-1] + 1))
    blocks = pd.DataFrame({"group": group[starts], "seed": seed[starts]})
    per_group = blocks.groupby("group")["seed"].agg(["size", "nunique"])
    counts = pd.DataFrame({"group": group[changed], "t": t[changed]}).value_counts()
    found: dict[str, tuple[int, ...]] = {}
    for code, (n_blocks, n_seeds) in per_group.iterrows():
        of_group = counts[counts.index.get_level_values("group") == code]
        if n_seeds > 1 and (of_group == n_blocks).all():
            rounds = of_group.index.get_level_values("t")
            found[str(frame["group"].cat.categories[code])] = tuple(sorted(map(int, rounds)))
    return found


def finals(frame: pd.DataFrame) -> pd.DataFrame:
    """The last round of every (run, seed) in ``frame``, with every metric's value there."""
    columns = {m.column for m in METRICS.values()}
    needed = ["run", "seed", "t", *KEYS, lab.AGENT, *columns]
    frame = frame[[column for column in frame.columns if column in needed]]
    if not _in_blocks(frame):
        frame = frame.sort_values(["run", "seed", "t"], kind="stable")
    run, seed = (frame[c].to_numpy(np.int64) for c in ("run", "seed"))
    last = np.append((run[1:] != run[:-1]) | (seed[1:] != seed[:-1]), len(run) > 0)
    rows = frame[last].copy()
    for name, metric in METRICS.items():
        if metric.column in rows:
            rows[name] = metric.values(rows).astype(np.float64)
    return rows.reset_index(drop=True)


def _in_blocks(frame: pd.DataFrame) -> bool:
    """Whether each (run, seed)'s rows are together, rounds increasing."""
    run, seed, t = (frame[c].to_numpy(np.int64) for c in ("run", "seed", "t"))
    new = np.append(True, (run[1:] != run[:-1]) | (seed[1:] != seed[:-1]))
    starts = set(zip(run[new].tolist(), seed[new].tolist(), strict=True))
    return len(starts) == int(new.sum()) and bool((np.diff(t)[~new[1:]] > 0).all())


def by_run_keys(final: pd.DataFrame, keys: Mapping[str, pd.Series], value: str) -> pd.DataFrame:
    """Mean, SE and seed count of ``value`` per combination of run-level ``keys`` (Series by
    run id), in the order of the runs in the first key."""
    first = next(iter(keys.values()))
    position = pd.Series(range(len(first)), index=first.index)
    table = pd.DataFrame({name: final["run"].map(key) for name, key in keys.items()})
    table["value"] = final[value].to_numpy()
    table["position"] = final["run"].map(position).to_numpy()
    table = table.dropna(subset=list(keys))
    rows = [
        (part["position"].min(), *combination, *mean_se(part["value"]))
        for combination, part in table.groupby(list(keys), sort=False)
    ]
    ordered = [row[1:] for row in sorted(rows, key=lambda row: row[0])]
    return pd.DataFrame(ordered, columns=[*keys, "mean", "se", "n"])


def paired_difference(
    final: pd.DataFrame, value: str, reference: str, ci: str = "se"
) -> pd.DataFrame:
    """Per group and agent: mean and SE over shared seeds of ``value`` minus the reference's
    (``diff_mean, diff_se, n_pairs``, and ``diff_ci_low, diff_ci_high`` with bootstrap)."""
    rows = []
    for group, in_group in final.groupby("group", observed=True, sort=False):
        base = in_group.loc[in_group["agent"] == reference].set_index("seed")[value]
        if base.empty:
            continue
        for agent, of_agent in in_group.groupby("agent", observed=True, sort=False):
            other = of_agent.set_index("seed")[value]
            shared = other.index.intersection(base.index)
            differences = other.loc[shared].to_numpy() - base.loc[shared].to_numpy()
            mean, se, n = mean_se(differences)
            bounds = bootstrap_ci(differences) if ci == "bootstrap" else ()
            rows.append((group, agent, mean, se, n, *bounds))
    columns = [*KEYS, "diff_mean", "diff_se", "n_pairs"]
    columns += ["diff_ci_low", "diff_ci_high"] * (ci == "bootstrap")
    return pd.DataFrame(rows, columns=columns)


def differing_seeds(final: pd.DataFrame) -> dict[str, dict[str, str]]:
    """Groups whose agents ran different seed sets: per agent, its seeds as ranges."""
    notes: dict[str, dict[str, str]] = {}
    for group, in_group in final.groupby("group", observed=True, sort=False):
        sets = {
            str(agent): frozenset(of_agent["seed"].tolist())
            for agent, of_agent in in_group.groupby("agent", observed=True, sort=True)
        }
        if len(set(sets.values())) > 1:
            notes[str(group)] = {agent: seed_ranges(seeds) for agent, seeds in sets.items()}
    return notes


def summary(
    final: pd.DataFrame,
    references: Mapping[str, str | None],
    *,
    settings: Sequence[str] = (),
    stats: Sequence[str] = (),
    ci: str = "se",
) -> pd.DataFrame:
    """One row per group and agent of ``final`` (``finals`` with the ``settings`` and
    ``stats`` columns, and ``COST`` where the runs recorded their time): the columns
    ``summarise`` returns."""
    bootstrap = ci == "bootstrap"
    rows = []
    for (group, agent), of_agent in final.groupby(KEYS, observed=True, sort=True):
        row: dict[str, object] = {"group": group, "agent": agent}
        if lab.AGENT in of_agent:
            row[lab.AGENT] = str(of_agent[lab.AGENT].iloc[0])
        row |= {column: of_agent[column].iloc[0] for column in settings}
        row["n_seeds"] = of_agent["seed"].nunique()
        row["final_t"] = of_agent["t"].max()
        for name in SUMMARY_METRICS:
            values = of_agent[name].to_numpy(np.float64)
            row[f"{name}_mean"], row[f"{name}_se"], _ = mean_se(values)
            row[f"{name}_iqm"] = iqm(values)
            if bootstrap:
                row[f"{name}_ci_low"], row[f"{name}_ci_high"] = bootstrap_ci(values)
        row[COST] = compute_cost(of_agent)
        rows.append(row)
    table = pd.DataFrame(rows)
    for column in settings:  # config values as they are: 100, not 100.0 beside a missing one
        table[column] = pd.Series([row[column] for row in rows], index=table.index, dtype=object)
    table["reference"] = [references.get(str(group)) or "" for group in table["group"]]
    diffs = []
    for group in table["group"].unique():
        label = references.get(str(group))
        if label:
            in_group = final[final["group"] == group]
            diffs.append(paired_difference(in_group, PAIRED_METRIC, label, ci))
    prefix = f"diff_{PAIRED_METRIC}"
    paired = [f"{prefix}_mean", f"{prefix}_se"]
    paired += [f"{prefix}_ci_low", f"{prefix}_ci_high"] * bootstrap + ["n_pairs"]
    if diffs:
        differences = pd.concat(diffs)
        renamed = [column.replace("diff", prefix, 1) for column in differences.columns[2:]]
        differences.columns = [*KEYS, *renamed]
        table = table.merge(differences[[*KEYS, *paired]], on=KEYS, how="left")
    else:
        table = table.assign(**{column: np.nan for column in paired})
    table["n_pairs"] = table["n_pairs"].astype("Int64")
    by_agent = final.groupby(KEYS, observed=True, sort=True)  # the table's rows, in order
    for stat, (mean_column, se_column) in stat_columns(stats).items():
        found = [mean_se(part) for _, part in by_agent[stat]]
        table[mean_column], table[se_column] = [m for m, _, _ in found], [s for _, s, _ in found]
    return table


def compute_cost(final: pd.DataFrame) -> float:
    """Seconds of simulation per 1,000 seed-rounds over the seeds of ``final`` whose time is
    recorded (``1000 * sum(seconds) / (seeds * horizon)``: the mean of their ``COST``); NaN
    where none is (results of a build that recorded no time)."""
    return float(final[COST].mean()) if COST in final else float("nan")  # NaN: skipped


def stat_columns(stats: Sequence[str]) -> dict[str, tuple[str, str]]:
    """Each per-seed statistic's mean and SE columns: ``<stat>_…``, or ``stat_<stat>_…`` where
    a summary column has the name."""
    taken = {*SUMMARY_METRICS, f"diff_{PAIRED_METRIC}", "n_seeds", "final_t", "n_pairs"}
    columns = {}
    for stat in stats:
        base = f"stat_{stat}" if stat in taken or stat.startswith("diff_") else stat
        columns[stat] = (f"{base}_mean", f"{base}_se")
    return columns
