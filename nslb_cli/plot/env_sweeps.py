"""Final regret against an environment setting that differs between the groups of one
experiment (``nslb plot``'s ``<name>-sweep-<setting>`` and ``<name>-diff-sweep-<setting>``).

A group holds the runs of one environment, so an environment setting is never swept inside a
group (docs/guide/plotting.md); here the groups of one experiment name are set side by side.
For a numeric setting ``X`` that varies between them, the groups are split by the other
environment settings that vary (``model=learned``, ``model=known``): each part whose groups
hold two or more values of ``X`` gives one line per agent, its final regret at each ``X``
(mean ± SE over seeds); each part with a single value gives references, one horizontal line
and band per agent (the known model beside models learned from more and more logs).

The paired figure takes the one run of the reference parts that ``--reference`` names
(default mTS) and draws every other run's paired difference to it,
``d_i = x_i - x_i(reference)`` over the seeds both ran, mean ± paired SE: valid however the
groups' worlds relate, and tight where the same seed is the same world (docs/design.md §2), as
it is across ``env.model`` and ``env.offline_rounds``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import pandas as pd

from nslb_cli.plot import labels as lab
from nslb_cli.plot.aggregate import PAIRED_METRIC, by_run_keys

DIFF = "diff"  # the paired difference of a run's seed to the reference's


@dataclass(frozen=True)
class EnvSweep:
    """Final regret against environment setting ``setting`` across the groups of experiment
    ``name``: the runs on lines and the reference runs, each labelled by its agent's label and
    its part's settings (``mTS (model=learned)``)."""

    name: str
    setting: str
    lines: str  # the parts on lines, in words ("model=learned"; "": no other setting varies)
    others: str  # the reference parts, in words ("model=known")
    labels: pd.Series  # run id -> legend label
    on_line: pd.DataFrame  # the labelled runs drawn as lines
    off_line: pd.DataFrame  # the labelled runs drawn as references
    reference: str = ""  # the paired figure's reference label; "": no paired figure
    paired: pd.DataFrame | None = None  # agent, x, mean, se, n: differences to ``reference``
    paired_references: pd.DataFrame | None = None  # agent, mean, se, n

    def on_keys(self, runs: pd.DataFrame) -> dict[str, pd.Series]:
        """``aggregate.by_run_keys``'s keys of runs on lines: label and setting."""
        return {"agent": self.labels[runs.index], "x": runs[self.setting]}

    def off_keys(self, runs: pd.DataFrame) -> dict[str, pd.Series]:
        """``aggregate.by_run_keys``'s keys of reference runs: their label."""
        return {"agent": self.labels[runs.index]}

    def points(self, final: pd.DataFrame) -> pd.DataFrame:
        """Final regret (mean ± SE) of each line's label at each value of the setting."""
        return by_run_keys(final, self.on_keys(self.on_line), PAIRED_METRIC)

    def references(self, final: pd.DataFrame) -> pd.DataFrame | None:
        """Final regret (mean ± SE) of each reference label; ``None`` without references."""
        if self.off_line.empty:
            return None
        return by_run_keys(final, self.off_keys(self.off_line), PAIRED_METRIC)

    @property
    def names(self) -> dict[str, str]:
        """Legend label -> agent name, of every run."""
        runs = pd.concat([self.on_line, self.off_line])
        return dict(zip(self.labels[runs.index], runs[lab.AGENT].map(str), strict=True))

    @property
    def plain(self) -> dict[str, str]:
        """The lines' labels -> agent name: each drawn in its agent's own style."""
        agents = self.on_line[lab.AGENT].map(str)
        return dict(zip(self.labels[self.on_line.index], agents, strict=True))


def env_sweeps(
    final: pd.DataFrame,
    runs: pd.DataFrame,
    selector: str | Sequence[str] | None,
    rename: Mapping[str, str] | None = None,
) -> list[EnvSweep]:
    """Every environment sweep of the labelled ``runs`` (``final``: one row per run and seed
    at its last round, as ``aggregate.finals``); ``selector``: the paired figures' reference
    (``labels.select``; of a sequence, the first that names a run), none where empty."""
    found = []
    for name, of_name in runs.groupby(runs[lab.NAME].map(lab.format_value), sort=False):
        groups = of_name.drop_duplicates(lab.GROUP)
        keys = [key for key in lab.group_keys(groups.columns) if key != lab.NAME]
        varying = lab.varying_columns(groups, keys)
        for setting in varying:
            if not all(lab.is_number(v) and not lab.missing(v) for v in groups[setting]):
                continue
            others = [key for key in varying if key != setting]
            lines, references = _parts(groups, setting, others)
            if not lines:
                continue
            on_line = of_name[of_name[lab.GROUP].isin(lines)]
            off_line = of_name[of_name[lab.GROUP].isin(references)]
            words = of_name.apply(lambda row, keys=others: _words(row, keys), axis=1)
            labels = of_name[lab.LABEL].map(str) + words
            parts = (_listed(words[on_line.index]), _listed(words[off_line.index]))
            sweep = EnvSweep(str(name), setting, *parts, labels, on_line, off_line)
            found.append(_paired(sweep, final, _reference_run(off_line, selector, rename)))
    return found


def _parts(groups: pd.DataFrame, setting: str, others: list[str]) -> tuple[list[str], list[str]]:
    """The groups on lines (their part holds two or more values of ``setting``) and the
    groups that are references (their part, one value)."""
    if not others:
        return list(groups[lab.GROUP]), []
    shown = [groups[key].map(_shown) for key in others]
    lines: list[str] = []
    references: list[str] = []
    for _, part in groups.groupby(shown, sort=False):
        many = part[setting].map(float).nunique() > 1
        (lines if many else references).extend(part[lab.GROUP])
    return lines, references


def _shown(value: object) -> str:
    return "" if lab.missing(value) else lab.format_value(value)


def _words(row: pd.Series, others: list[str]) -> str:
    """`` (model=learned)``: the settings of a run's part, for its legend label."""
    shown = [f"{lab.short_key(key)}={_shown(row[key])}" for key in others]
    return f" ({', '.join(shown)})" if shown else ""


def _listed(words: pd.Series) -> str:
    """The parts of some runs in words: ``model=learned``, ``model=known; model=prior``."""
    return "; ".join(dict.fromkeys(text[2:-1] for text in words))


def _reference_run(
    runs: pd.DataFrame, selector: str | Sequence[str] | None, rename: Mapping[str, str] | None
) -> int | None:
    """The one run of ``runs`` that ``selector`` names (of a sequence, its first name that
    names any); ``None`` where it names none or several."""
    for candidate in [selector] if isinstance(selector, str) else list(selector or []):
        named = set(lab.select(runs, candidate, rename)) if len(runs) else set()
        chosen = runs.index[runs[lab.LABEL].map(str).isin(named)]
        if len(chosen):
            return int(chosen[0]) if len(chosen) == 1 else None
    return None


def _paired(sweep: EnvSweep, final: pd.DataFrame, base: int | None) -> EnvSweep:
    """``sweep`` with every other run's paired difference to run ``base`` (``DIFF`` per seed
    both ran); unchanged without one."""
    if base is None:
        return sweep
    start = final.loc[final["run"] == base].set_index("seed")[PAIRED_METRIC]
    others = final[final["run"] != base]
    differences = others[PAIRED_METRIC].to_numpy() - others["seed"].map(start).to_numpy()
    paired = pd.DataFrame({"run": others["run"].to_numpy(), DIFF: differences})
    rest = sweep.off_line.drop(index=base)
    return replace(
        sweep,
        reference=str(sweep.labels[base]),
        paired=by_run_keys(paired, sweep.on_keys(sweep.on_line), DIFF),
        paired_references=by_run_keys(paired, sweep.off_keys(rest), DIFF) if len(rest) else None,
    )
