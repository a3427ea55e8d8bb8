"""The report of ``nslb plot DIR``: figures and summary tables for whatever results are
under DIR (the command line is :mod:`nslb_cli.cli.plot`).

The pipeline runs one way (:mod:`nslb_cli.plot` lists its steps); nothing is simulated. Per
group (an experiment ``name``, environment config and data), into ``--out``:

- ``<group>-<metric>.<fmt>``: each metric against the round, mean ± SE per agent;
- ``<group>-final_cum_regret.<fmt>``: final cumulative regret per agent, one dot per seed;
- ``<group>-summary.md`` / ``.csv``: seeds, final regret and reward, paired difference;
- ``<group>-sweep-<setting>.<fmt>``: for every agent setting run at several values in the
  group, final regret against it.

Over all groups: ``summary.md`` and ``summary.csv``; with ``--paper``, the paper's figures in
its layout (:mod:`~nslb_cli.plot.paper`): ``figure2``, ``figure3``, ``figure4``.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from nslb_cli.plot import aggregate, figures, paper, render, tables, tidy
from nslb_cli.plot import labels as lab
from nslb_cli.plot.aggregate import METRICS, PAIRED_METRIC, SUMMARY_METRICS
from nslb_cli.plot.styles import Style, style_map
from nslb_cli.store import provenance
from nslb_cli.store.folder import claim_plotted

DEFAULT_METRICS = ("cum_regret", "avg_reward")
DEFAULT_FORMATS = ("png", "pdf")
DEFAULT_REFERENCE = "mts"
UNEVEN = "agents ran different seed sets"
SEEDS_NOTE = f"{UNEVEN} (n in the legend); Δ uses the seeds both have"


class PlotError(Exception):
    """A problem with the command line or the results folder; the message is one line."""


@dataclass(frozen=True)
class Options:
    """What ``nslb plot`` was asked for (``nslb plot --help`` gives the meaning of each)."""

    root: Path
    out: Path
    formats: tuple[str, ...] = DEFAULT_FORMATS
    metrics: tuple[str, ...] = DEFAULT_METRICS
    agents: tuple[str, ...] = ()
    rename: tuple[tuple[str, str], ...] = ()
    reference: str | None = None  # None: DEFAULT_REFERENCE when present; "": no differences
    rounds: tuple[int | None, int | None] = (None, None)
    log_x: bool = False
    log_y: bool = False
    dpi: int = 150
    paper: bool = False
    cache: bool = True
    jobs: int | None = None  # drawing processes; None: as many as CPUs for large results


@dataclass(frozen=True)
class Sweep:
    """Final regret against one setting swept in one group: points and reference lines."""

    group: str
    setting: str
    points: pd.DataFrame  # agent, x, mean, se, n
    references: pd.DataFrame | None  # agent, mean, se, n: agents without the setting
    names: dict[str, str]  # agent label -> agent name, for the style map


def plot(options: Options) -> tuple[list[Path], list[str]]:
    """Load, aggregate, draw and write; return the files written and the markdown sections."""
    frame, runs = _load(options)
    rename = dict(options.rename)
    frame, runs = aggregate.labelled(frame, runs, rename, _order(runs, options.agents))
    final = aggregate.finals(frame)
    reference = DEFAULT_REFERENCE if options.reference is None else options.reference
    summary = aggregate.summary(final, reference or None)
    if options.reference and not summary["reference"].any():
        present = ", ".join(sorted(set(runs["agent"].map(str))))
        raise PlotError(
            f"--reference: no single agent '{options.reference}' in any group; present: {present}"
        )
    swept = sweeps(final, runs, rename)
    styles = _styles(runs, swept, rename)
    per_round = {name: aggregate.per_round(frame, METRICS[name]) for name in options.metrics}
    seeds = aggregate.differing_seeds(final)
    options.out.mkdir(parents=True, exist_ok=True)
    stems = _Stems(options.out)
    jobs: list[render.Job] = []
    sections: list[str] = []
    table_jobs: list[tuple[pd.DataFrame, str, Path]] = []
    group_stems = {group: stems.new(group) for group in dict.fromkeys(runs[lab.GROUP])}
    for group, stem in group_stems.items():
        note = SEEDS_NOTE if group in seeds else ""
        for name, stats in per_round.items():
            arguments = {
                "stats": stats[stats["group"] == group],
                "value_label": METRICS[name].label,
                "title": group,
                "styles": styles,
                "note": note,
                "log_x": options.log_x,
                "log_y": options.log_y,
            }
            jobs.append(render.Job(figures.curves, _suffixed(stem, name), arguments))
        in_group = final[final["group"] == group]
        last = in_group["t"].max()
        arguments = {
            "final": in_group,
            "value": PAIRED_METRIC,
            "value_label": f"final {METRICS[PAIRED_METRIC].label} (round {last})",
            "title": group,
            "styles": styles,
            "note": note,
        }
        box = _suffixed(stem, f"final_{PAIRED_METRIC}")
        jobs.append(render.Job(figures.final_distribution, box, arguments))
        details = (
            f"environment: {lab.environment(runs[runs[lab.GROUP] == group].iloc[0])}; values at "
            f"round {last}, mean ± SE over seeds; Δ: difference to the reference on the same seeds"
        )
        if group in seeds:
            sets = "; ".join(f"{agent} {ranges}" for agent, ranges in seeds[group].items())
            details += f"\n\nseed sets differ between agents: {sets}"
        rows = summary[summary["group"] == group]
        sections.append(tables.markdown(rows, title=group, details=details))
        table_jobs.append((rows, sections[-1], _suffixed(stem, "summary")))
    for sweep in swept:
        arguments = {
            "points": sweep.points,
            "parameter": sweep.setting,
            "value_label": f"final {METRICS[PAIRED_METRIC].label}",
            "title": sweep.group,
            "styles": styles,
            "references": sweep.references,
        }
        stem = _suffixed(group_stems[sweep.group], f"sweep-{lab.short_key(sweep.setting)}")
        jobs.append(render.Job(figures.sweep, stem, arguments))
    if options.paper:
        jobs += _paper(frame, final, runs, per_round, styles, stems, set(seeds))
    table_jobs.append((summary, "\n".join(sections), options.out / "summary"))
    planned = [f"{job.stem.name}.{fmt}" for job in jobs for fmt in options.formats]
    planned += [f"{stem.name}.{suffix}" for *_, stem in table_jobs for suffix in ("md", "csv")]
    claim_plotted(options.out, planned)  # nothing it did not write is replaced
    processes = options.jobs or render.workers(len(frame))
    written = render.run(jobs, options.formats, options.dpi, processes)
    for rows, text, stem in table_jobs:
        written += tables.write(rows, text, stem)
    return written, sections


def _load(options: Options) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The selected rows and runs; skipped files are reported on stderr, one line each."""
    if not options.root.is_dir():
        raise PlotError(f"{options.root}: no such folder")
    columns = {METRICS[name].column for name in (*options.metrics, *SUMMARY_METRICS)}
    if options.paper:
        columns |= {METRICS[figure.metric].column for figure in paper.FIGURES}
    loaded = tidy.load(options.root, sorted(columns), use_cache=options.cache, join_config=False)
    for skipped in loaded.skipped:
        _warn(f"skipped {skipped}")
    if loaded.n_files == 0:
        raise PlotError(
            f"no results in {options.root}: no seed=K.csv files below it (`nslb run` writes them)"
        )
    if loaded.frame.empty:
        raise PlotError(
            f"no readable results in {options.root}: all {loaded.n_files} seed files were "
            "skipped (reasons above)"
        )
    runs, frame = loaded.runs, loaded.frame
    _warn_mixed_versions(options.root, runs[lab.FOLDER])
    if options.agents:
        names = runs[lab.AGENT].map(str)
        shown = names.map(lab.display_name)
        missing = [a for a in options.agents if not ((names == a) | (shown == a)).any()]
        if missing:
            present = ", ".join(sorted(set(names)))
            raise PlotError(f"--agents: no results for {', '.join(missing)}; present: {present}")
        runs = runs[names.isin(options.agents) | shown.isin(options.agents)]
    start, end = options.rounds
    last = int(frame["t"].max())
    for bound, name in ((start, "START"), (end, "END")):
        if bound is not None and bound > last:
            raise PlotError(
                f"--rounds: {name} {bound} is past the last round of the results ({last})"
            )
    keep = frame["run"].isin(runs.index)
    if start is not None:
        keep &= frame["t"] >= start
    if end is not None:
        keep &= frame["t"] <= end
    frame = frame[keep]
    if frame.empty:
        raise PlotError(f"--rounds: no results in rounds {start or 1}…{end or 'end'}")
    return frame, runs.loc[frame["run"].unique()]


def _warn_mixed_versions(root: Path, folders: pd.Series) -> None:
    """One line when the runs were written by different nslb versions (``provenance.jsonl``)."""
    versions: set[str] = set()
    for joined in folders:
        for folder in str(joined).split("; "):
            versions |= provenance.versions(root / folder)
    if len(versions) > 1:
        _warn(f"combines runs made by different nslb versions: {', '.join(sorted(versions))}")


def sweeps(final: pd.DataFrame, runs: pd.DataFrame, rename: dict[str, str]) -> list[Sweep]:
    """Per group, for every swept agent setting: final regret against its values."""
    found = []
    for group, settings in lab.swept_settings(runs).items():
        in_group = runs[runs[lab.GROUP] == group]
        for setting in settings:
            has = in_group[setting].notna()
            with_setting, without = in_group[has], in_group[~has]
            hue = lab.agent_labels(with_setting, [lab.GROUP], rename, exclude=[setting])
            keys = {"agent": hue, "x": with_setting[setting]}
            points = aggregate.by_run_keys(final, keys, PAIRED_METRIC)
            references = None
            names = dict(zip(hue, with_setting[lab.AGENT].map(str), strict=True))
            if not without.empty:
                others = lab.agent_labels(without, [lab.GROUP], rename, exclude=[setting])
                references = aggregate.by_run_keys(final, {"agent": others}, PAIRED_METRIC)
                names |= dict(zip(others, without[lab.AGENT].map(str), strict=True))
            found.append(Sweep(group, setting, points, references, names))
    return found


def _styles(runs: pd.DataFrame, swept: list[Sweep], rename: dict[str, str]) -> dict[str, Style]:
    """One style per agent label of every figure of the report (see :mod:`styles`)."""
    names = dict(zip(runs[lab.LABEL], runs[lab.AGENT].map(str), strict=True))
    for sweep in swept:
        names |= sweep.names
    plain = {
        label: name for label, name in names.items() if lab.display_name(name, rename) == label
    }
    return style_map(names, plain)


def _paper(
    frame: pd.DataFrame,
    final: pd.DataFrame,
    runs: pd.DataFrame,
    per_round: dict[str, pd.DataFrame],
    styles: dict[str, Style],
    stems: _Stems,
    uneven: set[str],
) -> list[render.Job]:
    """The paper's figures (see :mod:`~nslb_cli.plot.paper`) whose results are present;
    ``uneven``: the groups whose agents ran different seed sets."""
    seeds = final.groupby("run")["seed"].nunique().to_dict()
    groups = paper.preset_groups(runs, seeds, _warn)
    jobs = []
    for spec in paper.FIGURES:
        present = [(preset, title) for preset, title in spec.panels if preset in groups]
        if not present:
            continue
        missing = [f"paper/{preset}" for preset, _ in spec.panels if preset not in groups]
        if missing:
            _warn(f"--paper: {spec.stem} without {', '.join(missing)} (no results)")
        stats = per_round.get(spec.metric)
        if stats is None:
            stats = aggregate.per_round(frame, METRICS[spec.metric])
        panels = []
        for preset, title in present:
            group = groups[preset]
            run = runs[runs[lab.GROUP] == group].iloc[0]
            title = paper.panel_title(title, run) + ("\n" + UNEVEN if group in uneven else "")
            panels.append((title, stats[stats["group"] == group]))
        arguments = {"figure_spec": spec, "panels": panels, "styles": styles}
        jobs.append(render.Job(paper.draw, stems.new(spec.stem), arguments))
    return jobs


class _Stems:
    """File name stems from titles: safe characters only, never the same stem twice."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.used: set[str] = set()

    def new(self, title: str) -> Path:
        base = re.sub(r"[^A-Za-z0-9._=+-]+", "_", title).strip("_") or "results"
        stem, i = base, 2
        while stem in self.used:
            stem, i = f"{base}-{i}", i + 1
        self.used.add(stem)
        return self.out / stem


def _suffixed(stem: Path, suffix: str) -> Path:
    return stem.with_name(f"{stem.name}-{suffix}")


def _order(runs: pd.DataFrame, agents: Sequence[str]) -> list[str] | None:
    """Agent names in the order ``agents`` lists them (by agent or display name)."""
    if not agents:
        return None
    names = list(dict.fromkeys(runs[lab.AGENT].map(str)))
    return sorted(
        names,
        key=lambda n: min(
            (i for i, a in enumerate(agents) if a in (n, lab.display_name(n))), default=len(agents)
        ),
    )


def _warn(message: str) -> None:
    print(f"nslb plot: {message}", file=sys.stderr)
