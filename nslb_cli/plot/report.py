"""The report of ``nslb plot DIR``: figures and summary tables for whatever results are
under DIR (the files it writes are listed in docs/guide/plotting.md).
"""

from __future__ import annotations

import hashlib
import math
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from nslb_cli.plot import (
    aggregate,
    belief,
    env_sweeps,
    figures,
    layout,
    pairwise,
    paper,
    reproduction,
    study,
    tables,
    tidy,
    tracked,
)
from nslb_cli.plot import labels as lab
from nslb_cli.plot.aggregate import METRICS, PAIRED_METRIC, SUMMARY_METRICS
from nslb_cli.plot.identity import DATA, dataset
from nslb_cli.plot.progress import Progress
from nslb_cli.plot.selection import PlotError, select
from nslb_cli.plot.styles import Style, style_map
from nslb_cli.store.atomic import atomic_write_text
from nslb_cli.store.folder import claim_plotted
from nslb_cli.store.results import seed_ranges

DEFAULT_FORMATS = ("png", "pdf")
DEFAULT_DPI = 150
CAPTION = "caption.txt"  # publication mode: <stem>.caption.txt beside each figure
UNEVEN = "agents ran different seed sets"
SEEDS_NOTE = f"{UNEVEN}; Δ uses the seeds both have"


@dataclass(frozen=True)
class Options:
    """What ``nslb plot`` was asked for (``nslb plot --help`` gives the meaning of each)."""

    root: Path
    out: Path
    formats: tuple[str, ...] = DEFAULT_FORMATS
    metrics: tuple[str, ...] = aggregate.DEFAULT_METRICS
    agents: tuple[str, ...] = ()
    rename: tuple[tuple[str, str], ...] = ()
    reference: str | None = None  # None: aggregate.DEFAULT_REFERENCE; "": no differences
    rounds: tuple[int | None, int | None] = (None, None)
    log_x: bool = False
    log_y: bool = False
    dpi: int | None = None  # None: the style's savefig.dpi, else DEFAULT_DPI
    paper: bool = False  # publication mode, with the paper's figures
    width: float | None = None  # inches: the paper's figures as printed; None: nslb's layout
    style: str | None = None  # a matplotlib style file (or style name)
    context: str = "paper"  # seaborn's plotting context
    ci: str = "se"  # "bootstrap": a 95 % bootstrap interval beside mean ± SE
    sweep_references: bool = True  # sweep figures: the group's other agents as bands
    sweep_log_x: str = "auto"  # sweep figures' x axis: SWEEP_LOG_X
    belief_seed: int | None = None  # a belief strip of this seed per group (belief.strip)
    track: bool = False  # each group's files to its run folders' MLflow runs (tracked.py)


@dataclass(frozen=True)
class Sweep:
    """Final regret against one setting swept in one group: points and reference lines."""

    group: str
    setting: str
    points: pd.DataFrame  # agent, x, mean, se, n
    references: pd.DataFrame | None  # agent, mean, se, n: agents without the setting
    names: dict[str, str]  # agent label -> agent name, for the style map


@dataclass(frozen=True)
class Job:
    """One figure to draw (``draw(**arguments)``) and save as ``stem.<format>``."""

    draw: Callable[..., Figure]
    stem: Path
    arguments: dict[str, Any] = field(default_factory=dict)


@dataclass
class _Work:
    """What a report of ``options`` will write, named by ``stems``: figures (jobs), tables
    (Markdown and CSV, some also LaTeX), captions (in publication mode) and printed sections."""

    options: Options
    stems: _Stems
    jobs: list[Job] = field(default_factory=list)
    tables: list[tuple[pd.DataFrame, str, Path, list[str]]] = field(default_factory=list)
    captions: dict[Path, str] = field(default_factory=dict)  # figure stem -> caption
    latex: dict[Path, str] = field(default_factory=dict)  # table stem -> its booktabs tabular
    sections: list[str] = field(default_factory=list)
    folders: dict[Path, list[Path]] = field(default_factory=dict)  # group stem -> run folders

    def figure(self, draw: Callable[..., Figure], stem: Path, args: dict, caption: str) -> None:
        self.jobs.append(Job(draw, stem, args))
        if self.options.paper:
            self.captions[stem] = caption


def plot(options: Options) -> tuple[list[Path], list[str]]:
    """Load, aggregate, draw and write; return the files written and the markdown sections."""
    try:
        style = figures.read_style(options.style) if options.style else None
    except ValueError as err:
        raise PlotError(f"--style: {err}") from None
    rc = figures.theme(options.context, style)
    style_dpi = rc.get("savefig.dpi", 0)  # a number a style file sets, or "figure"
    if not isinstance(style_dpi, int | float) or isinstance(style_dpi, bool):
        style_dpi = 0
    dpi = options.dpi or int(style_dpi) or DEFAULT_DPI
    asked = []  # refused before anything is drawn: even the smallest figure too large
    if any(fmt not in figures.VECTOR_FORMATS for fmt in options.formats):
        asked.append((f"--dpi {dpi}" if options.dpi else f"--style: savefig.dpi {dpi}", dpi))
    asked.append((f"--style: figure.dpi {rc['figure.dpi']:g}", rc["figure.dpi"]))
    for what, value in asked:  # a layout.TooLarge is a PlotError
        layout.check_pixels(*layout.SMALLEST_FIGURE, value, what, least=True)
    studies, skipped = study.find(options.root) if options.root.is_dir() else ([], [])
    for item in skipped:
        warn(f"skipped {item}")
    work = _Work(options, _Stems(options.out))
    progress = Progress(warn, shown=sys.stderr.isatty())
    loaded = _load(options, [options.root / found.folder for found in studies], progress)
    if loaded is not None:
        _results(work, *loaded)
    for found in studies:
        _study(work, found)
    planned = [f"{job.stem.name}.{fmt}" for job in work.jobs for fmt in options.formats]
    planned += [f"{stem.name}.{CAPTION}" for stem in work.captions]
    planned += [
        f"{stem.name}.{suffix}" for _, _, stem, _ in work.tables for suffix in ("md", "csv")
    ]
    planned += [f"{stem.name}.tex" for stem in work.latex]
    claim_plotted(options.out, planned)  # made if need be; nothing it did not write is replaced
    written = []
    for done, job in enumerate(work.jobs):  # grown large around huge fonts: layout.TooLarge
        progress.step("drew", done, len(work.jobs), "figures")
        with figures.drawing_with(rc):
            figure = job.draw(**job.arguments)
            written += figures.save(figure, job.stem, options.formats, dpi)
    for stem, text in work.captions.items():
        path = stem.with_name(f"{stem.name}.{CAPTION}")
        atomic_write_text(path, text)
        written.append(path)
    for table, text, stem, settings in work.tables:
        written += tables.write(table, text, stem, settings)
    for stem, text in work.latex.items():
        written.append(stem.with_name(f"{stem.name}.tex"))
        atomic_write_text(written[-1], text)
    if options.track:
        tracked.log_group_files(work.folders, written, warn)
    return written, work.sections


def _results(
    work: _Work, frame: pd.DataFrame, runs: pd.DataFrame, seed_stats: pd.DataFrame
) -> None:
    """The figures and tables of the results: per group, sweeps, the paper's figures."""
    options, stems = work.options, work.stems
    rename = dict(options.rename)
    frame, runs = aggregate.labelled(frame, runs, rename, lab.agent_order(runs, options.agents))
    references = _references(runs, options.reference, rename)
    final = aggregate.finals(frame)
    settings = [lab.NAME, *lab.setting_columns(runs.columns)]
    stats = [c for c in seed_stats.columns if c not in ("run", "seed", aggregate.COST)]
    final = final.merge(runs[settings], left_on="run", right_index=True, how="left")
    final = final.merge(seed_stats, on=["run", "seed"], how="left")
    summary = aggregate.summary(final, references, settings=settings, stats=stats, ci=options.ci)
    swept = sweeps(final, runs, rename)
    selector = aggregate.DEFAULT_REFERENCE if options.reference is None else options.reference
    env_swept = env_sweeps.env_sweeps(final, runs, selector, rename)
    styles = _styles(runs, swept, rename, env_swept)
    per_round = {name: aggregate.per_round(frame, METRICS[name]) for name in options.metrics}
    paired = {m: aggregate.paired_per_round(frame, METRICS[m], references) for m in DIFF_METRICS}
    changes = aggregate.change_points(frame)
    seeds = aggregate.differing_seeds(final)
    group_stems = {group: stems.new(group) for group in dict.fromkeys(runs[lab.GROUP])}
    sections, tabulars = [], []  # per group: its Markdown summary and its LaTeX one
    for group, stem in group_stems.items():
        listed = runs.loc[runs[lab.GROUP] == group, "folder"]
        work.folders[stem] = [options.root / f for text in listed for f in str(text).split("; ")]
        note = SEEDS_NOTE if group in seeds else ""
        environment = lab.environment(runs[runs[lab.GROUP] == group].iloc[0])
        in_group = final[final["group"] == group]
        latent_ar = runs.loc[runs[lab.GROUP] == group, "env.name"].eq("latent_ar").any()
        known = (references.get(group), changes.get(group, ()))
        drawn = _Drawn(group, stem, styles, note, environment, bool(latent_ar), *known)
        _group_figures(work, drawn, per_round, in_group)
        _difference_figures(work, drawn, paired)
        interval = " [95 % bootstrap CI of the mean]" if options.ci == "bootstrap" else ""
        details = (
            f"environment: {environment}; values at round {int(in_group['t'].max())}, mean ± SE "
            f"over seeds{interval}; IQM: interquartile mean (the middle half of the seeds); Δ: "
            f"difference to the reference on the same seeds; {tables.COST_TITLE}: seconds the "
            "simulation took per 1,000 rounds of one seed, as the runs recorded them"
        )
        if group in seeds:
            sets = "; ".join(f"{agent} {ranges}" for agent, ranges in seeds[group].items())
            details += f"\n\nseed sets differ between agents: {sets}"
        rows = summary[summary["group"] == group]
        sections.append(tables.markdown(rows, title=group, details=details, stats=stats))
        work.tables.append((rows, sections[-1], _Stems.suffixed(stem, "summary"), settings))
        tabulars.append(tables.latex(rows, stats=stats))
        work.latex[_Stems.suffixed(stem, "summary")] = tabulars[-1]
    for found in swept:
        _sweep_figure(work, found, group_stems[found.group], styles)
    for across in env_swept:
        _env_sweep_figures(work, across, final, styles)
    if options.belief_seed is not None:
        _belief_figures(work, frame, group_stems, styles)
    if options.paper:
        _paper(work, frame, final, runs, per_round, styles, set(seeds))
    work.sections += sections
    work.tables.append((summary, "\n".join(sections), options.out / "summary", settings))
    headed = (f"% {group}\n{text}" for group, text in zip(group_stems, tabulars, strict=True))
    work.latex[options.out / "summary"] = "\n".join(headed)  # a blank line: one under another
    found, text = tables.detection_table(summary, settings)
    if text:
        work.sections.append(text)
        work.tables.append((found, text, stems.new("detections"), settings))


@dataclass(frozen=True)
class _Drawn:
    """What every figure of one group shares: its title, file stem, styles and notes."""

    group: str
    stem: Path
    styles: dict[str, Style]
    note: str  # e.g. that agents ran different seed sets, or ""
    environment: str
    pairwise: bool = False  # Trella et al.'s pairwise comparison: env=latent_ar's groups
    reference: str | None = None  # the agent of the paired differences, if any
    changes: tuple[int, ...] = ()  # the true change points, the same on every seed


def _group_figures(
    work: _Work, drawn: _Drawn, per_round: dict[str, pd.DataFrame], final: pd.DataFrame
) -> None:
    """A group's curves (one figure per metric) and its final-regret distribution."""
    options = work.options
    publication = options.paper
    title = "" if publication else drawn.group
    common = {"title": title, "styles": drawn.styles, "note": drawn.note}
    for name, stats_of in per_round.items():
        in_group = _drawn_rounds(stats_of[stats_of["group"] == drawn.group], name, options)
        arguments = {"stats": in_group, "value_label": METRICS[name].label, **common}
        arguments |= {"log_x": options.log_x, "log_y": options.log_y, "changes": drawn.changes}
        first = int(in_group["t"].min()) if len(in_group) else 1
        rounds = f" from round {first}" if first > 1 else ""
        caption = (
            f"{drawn.group}: {METRICS[name].label}{rounds}, mean {_seeds(in_group)} with a band "
            f"of ± one standard error. Environment: {drawn.environment}."
            f"{_changes(drawn)}{_note(drawn.note)}\n"
        )
        work.figure(figures.curves, _Stems.suffixed(drawn.stem, name), arguments, caption)
    value_label = f"final {METRICS[PAIRED_METRIC].label} (round {final['t'].max()})"
    arguments = {"final": final, "value": PAIRED_METRIC, "value_label": value_label, **common}
    box = _Stems.suffixed(drawn.stem, f"final_{PAIRED_METRIC}")
    counts = final.groupby("agent", observed=True)["seed"].nunique().rename("n").reset_index()
    n = figures.common_seeds(counts)
    each = f"{n} per agent" if n is not None else "n beside each name"
    caption = (
        f"{drawn.group}: {value_label} of each agent: box from the first to the third "
        "quartile, the median, whiskers to the furthest seed within 1.5 interquartile ranges, "
        f"and one dot per seed ({each}). Environment: {drawn.environment}.{_note(drawn.note)}\n"
    )
    work.figure(figures.final_distribution, box, arguments, caption)
    if publication and drawn.pairwise and final["agent"].nunique() > 1:
        arguments = {"final": final, "value": PAIRED_METRIC, "title": title}
        caption = (
            f"{drawn.group}: share of the seeds (paired) on which the row's agent ends with a "
            f"lower {value_label} than the column's; last column: its average over the other "
            f"agents. Environment: {drawn.environment}.{_note(drawn.note)}\n"
        )
        work.figure(pairwise.heatmap, _Stems.suffixed(drawn.stem, "pairwise"), arguments, caption)


def _belief_figures(
    work: _Work, frame: pd.DataFrame, group_stems: dict[str, Path], styles: dict[str, Style]
) -> None:
    """Per group, the belief strip of ``--belief-seed`` of its agents that report a belief;
    a seed no group has is an error in one line."""
    seed = work.options.belief_seed
    rows = frame[frame["seed"] == seed]
    if rows.empty:
        present = seed_ranges(sorted(int(s) for s in frame["seed"].unique()))
        raise PlotError(f"--belief-seed {seed}: no results of seed {seed} (seeds: {present})")
    drawn = 0
    for group, stem in group_stems.items():
        of_group = rows[rows["group"] == group]
        agents = belief.believers(of_group)
        if not agents:
            continue
        title = "" if work.options.paper else group
        arguments = {"rows": of_group, "seed": seed, "title": title, "styles": styles}
        caption = (
            f"{group}, seed {seed}: per agent that reports a belief, the true latent state "
            "(grey) and the agent's believed state against the round; last panel: the "
            "posterior mass each puts on the true state.\n"
        )
        strip = _Stems.suffixed(stem, f"belief-seed={seed}")
        work.figure(belief.strip, strip, arguments, caption)
        drawn += 1
    if not drawn:
        warn(f"--belief-seed {seed}: no agent of seed {seed} reports a belief; no strip drawn")


DIFF_METRICS = (PAIRED_METRIC, "avg_reward")  # drawn as paired differences to the reference


def _difference_figures(work: _Work, drawn: _Drawn, paired: dict[str, pd.DataFrame]) -> None:
    """A group's paired differences to its reference agent against the round, one figure per
    metric of ``DIFF_METRICS``; none without a reference or another agent."""
    options = work.options
    for name, stats_of in paired.items():
        in_group = _drawn_rounds(stats_of[stats_of["group"] == drawn.group], name, options)
        if not drawn.reference or in_group.empty:
            continue
        label = METRICS[name].label
        arguments = {"stats": in_group, "value_label": label, "reference": drawn.reference}
        arguments |= {"title": "" if options.paper else drawn.group, "styles": drawn.styles}
        arguments |= {"note": drawn.note, "log_x": options.log_x, "changes": drawn.changes}
        first = int(in_group["t"].min())
        rounds = f" from round {first}" if first > 1 else ""
        caption = (
            f"{drawn.group}: paired difference of the {label}{rounds} of each agent to "
            f"{drawn.reference}'s on the same seed (below zero: less than {drawn.reference}), "
            f"mean {_seeds(in_group, pairs=True)} with a band of ± one paired "
            f"standard error. Environment: {drawn.environment}.{_changes(drawn)}"
            f"{_note(drawn.note)}\n"
        )
        stem = _Stems.suffixed(drawn.stem, f"diff_{name}")
        work.figure(figures.curves, stem, arguments, caption)


def _seeds(counts: pd.DataFrame, pairs: bool = False) -> str:
    """``over 100 seeds`` when every agent of ``counts`` (``agent``, ``n``) ran as many (or,
    of ``pairs``, shares as many with the reference), else ``over seeds (n in the legend)``:
    the caption states the count the legend leaves out."""
    n = figures.common_seeds(counts)
    seeds = "the seeds both ran" if pairs else "seeds"
    if n is None:
        return f"over {seeds} (n in the legend)"
    return f"over the {n} seeds both ran" if pairs else f"over {n} seed{'s' * (n != 1)}"


def _changes(drawn: _Drawn) -> str:
    return figures.CHANGES_CAPTION if drawn.changes else ""


SWEEP_LOG_X = {  # --sweep-log-x: whether a sweep's numeric axis is logarithmic, and why
    "auto": (
        None,
        "logarithmic where the values are numbers above 0 whose largest is over 10 times the "
        "smallest, else linear",
    ),
    "on": (True, "logarithmic where the values are numbers above 0, else linear"),
    "off": (False, "linear"),
}


def _sweep_figure(work: _Work, found: Sweep, stem: Path, styles: dict[str, Style]) -> None:
    """Final regret against one swept setting of a group; the group's agents without it as
    bands unless ``--no-sweep-references``."""
    options = work.options
    label = f"final {METRICS[PAIRED_METRIC].label}"
    references = found.references if options.sweep_references else None
    log_x, scale = SWEEP_LOG_X[options.sweep_log_x]
    arguments = {
        "points": found.points,
        "parameter": found.setting,
        "value_label": label,
        "title": "" if options.paper else found.group,
        "styles": styles,
        "references": references,
        "log_x": log_x,
    }
    others = (
        "; horizontal lines and bands: the agents of the group without that setting"
        if references is not None and not references.empty
        else ""
    )
    caption = (
        f"{found.group}: {label} (mean ± standard error over seeds, n in the legend) "
        f"against {found.setting} (x axis: {scale}){others}.\n"
    )
    swept = _Stems.suffixed(stem, f"sweep-{lab.short_key(found.setting)}")
    work.figure(figures.sweep, swept, arguments, caption)


def _env_sweep_figures(
    work: _Work, found: env_sweeps.EnvSweep, final: pd.DataFrame, styles: dict[str, Style]
) -> None:
    """Final regret against an environment setting across the groups of one experiment, and
    its paired differences to the reference run where there is one (``env_sweeps``)."""
    options = work.options
    label = f"final {METRICS[PAIRED_METRIC].label}"
    log_x, scale = SWEEP_LOG_X[options.sweep_log_x]
    common: dict[str, Any] = {"parameter": found.setting, "value_label": label}
    common |= {"styles": styles, "title": "" if options.paper else found.name, "log_x": log_x}
    against = f"against {found.setting} (x axis: {scale}), one line per agent"
    against += f" of the runs of {found.lines}" if found.lines else ""
    references = found.references(final) if options.sweep_references else None
    others = f"; horizontal lines and bands: the runs of {found.others}"
    caption = (
        f"{found.name}: {label} (mean ± standard error over seeds, n in the legend) {against}"
        f"{others if references is not None else ''}.\n"
    )
    arguments = {"points": found.points(final), "references": references, **common}
    stem = work.stems.new(f"{found.name}-sweep-{lab.short_key(found.setting)}")
    work.figure(figures.sweep, stem, arguments, caption)
    if not found.reference or found.paired is None:
        return
    rest = found.paired_references if options.sweep_references else None
    others = f"; horizontal lines and bands: the other runs of {found.others}"
    caption = (
        f"{found.name}: paired difference of each run's {label} to {found.reference}'s on the "
        f"same seed (the zero line; below it: less than {found.reference}), mean ± one paired "
        f"standard error over the seeds both ran (n in the legend), {against}"
        f"{others if rest is not None else ''}.\n"
    )
    arguments = {"points": found.paired, "references": rest, "reference": found.reference}
    stem = work.stems.new(f"{found.name}-diff-sweep-{lab.short_key(found.setting)}")
    work.figure(figures.sweep, stem, arguments | common, caption)


def _note(note: str) -> str:
    return f" Note: {note}." if note else ""


def _drawn_rounds(stats: pd.DataFrame, metric: str, options: Options) -> pd.DataFrame:
    """The rounds of a metric's curve: a running mean from the end of its transient unless
    ``--rounds`` gives a START."""
    if not METRICS[metric].running_mean or options.rounds[0] is not None or stats.empty:
        return stats
    start = max(1, math.ceil(int(stats["t"].max()) * aggregate.TRANSIENT))
    return stats[stats["t"] >= start]


def _references(
    runs: pd.DataFrame, reference: str | None, rename: dict[str, str]
) -> dict[str, str | None]:
    """Each group's reference label; a ``--reference`` naming no agent, or several, is an error."""
    selector = aggregate.DEFAULT_REFERENCE if reference is None else reference
    try:
        found, ambiguous = lab.references(runs, selector or None, rename, required=bool(reference))
    except lab.SelectionError as err:
        raise PlotError(f"--reference: {err}") from None
    for group, named in ambiguous.items():
        warn(
            f"no paired differences in {group}: it has several {lab.display_name(named)} "
            f"runs; name one with --reference, e.g. --reference '{named}(key=value)'"
        )
    return found


def warn(message: str) -> None:
    """One line on stderr, ``nslb plot: message``."""
    print(f"nslb plot: {message}", file=sys.stderr)


def _load(
    options: Options, studies: Sequence[Path], progress: Progress
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame] | None:
    """The selected rows, runs and per-seed statistics of the results outside the ``studies``
    folders (their trials are plotted as studies: objective, parameters, trials table);
    ``None`` when there are none but a study; ``progress``: told the seed files read."""
    if not options.root.is_dir():
        raise PlotError(f"{options.root}: no such folder")
    columns = {METRICS[name].column for name in (*options.metrics, *SUMMARY_METRICS)}
    columns |= {"state", *(belief.COLUMNS if options.belief_seed is not None else ())}
    if options.paper:
        columns |= {METRICS[figure.metric].column for figure in paper.FIGURES}
    read = partial(progress.step, "read", things="seed files")
    loaded = tidy.load(options.root, sorted(columns), False, studies, read)
    for skipped in loaded.skipped:
        warn(f"skipped {skipped}")
    if loaded.n_files == 0:
        if studies:
            return None
        raise PlotError(
            f"no results in {options.root}: no seed=K.csv files (or results.parquet) below it "
            "(`nslb run` writes them)"
        )
    if loaded.frame.empty:
        raise PlotError(
            f"no readable results in {options.root}: every result file below it was skipped "
            "(reasons above)"
        )
    for line in tidy.mixed_makers(loaded):
        warn(line)
    frame, runs = select(loaded.frame, loaded.runs, options.agents, options.rounds, warn)
    seed_stats = loaded.seed_stats[loaded.seed_stats["run"].isin(runs.index)]
    return frame, runs, seed_stats


def _study(work: _Work, found: study.Study) -> None:
    """A study's figures (objective by trial, against each parameter) and table."""
    where = found.folder.as_posix()
    name = "study" if where == "." else f"study {where}"
    title = "" if work.options.paper else name
    stem = work.stems.new("study" if where == "." else f"{where}-study")
    caption = study.caption(found, "objective of each trial and the best so far")
    history = {"study": found, "title": title}
    work.figure(study.history, _Stems.suffixed(stem, "objective"), history, caption)
    for key in found.params:
        arguments = {"study": found, "key": key, "title": title}
        caption = study.caption(found, f"objective against {key}, darker: later trials")
        parameter = _Stems.suffixed(stem, f"param-{key}")
        work.figure(study.parameter, parameter, arguments, caption)
    trials = study.table(found)
    text = study.markdown(found, trials, name)
    work.sections.append(text)
    work.tables.append((trials, text, stem, []))


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


def _styles(
    runs: pd.DataFrame,
    swept: list[Sweep],
    rename: dict[str, str],
    across: Sequence[env_sweeps.EnvSweep] = (),
) -> dict[str, Style]:
    """One style per agent label of every figure of the report (``styles``); the lines of an
    environment sweep (``across``) in their agent's own style."""
    names = dict(zip(runs[lab.LABEL], runs[lab.AGENT].map(str), strict=True))
    families = lab.ordered_families(runs)
    for found in swept:
        names |= found.names
    plain = {
        label: name for label, name in names.items() if lab.display_name(name, rename) == label
    }
    for env_sweep in across:
        names |= env_sweep.names
        plain |= env_sweep.plain
    return style_map(names, plain, families, names)


def _paper(
    work: _Work,
    frame: pd.DataFrame,
    final: pd.DataFrame,
    runs: pd.DataFrame,
    per_round: dict[str, pd.DataFrame],
    styles: dict[str, Style],
    uneven: set[str],
) -> None:
    """The paper's figures whose results are present, with their captions, and the claim
    table of each paper whose presets ran (``reproduction``); ``uneven``: the groups whose
    agents ran different seed sets."""
    options, stems = work.options, work.stems
    seeds = final.groupby("run")["seed"].nunique().to_dict()
    groups = paper.preset_groups(runs, seeds, warn)
    true_changes = aggregate.change_points(frame)
    for spec in paper.FIGURES:
        present = [(preset, what) for preset, what in spec.panels if preset in groups]
        if not present:
            continue
        missing = [f"paper/{preset}" for preset, _ in spec.panels if preset not in groups]
        if missing:
            warn(f"--paper: {spec.stem} without {', '.join(missing)} (no results)")
        stats = per_round.get(spec.metric)
        if stats is None:
            stats = aggregate.per_round(frame, METRICS[spec.metric])
        panels, described, counts = [], [], []
        for preset, what in present:
            group = groups[preset]
            run = runs[runs[lab.GROUP] == group].iloc[0]
            in_group = _drawn_rounds(stats[stats["group"] == group], spec.metric, options)
            panels.append(in_group)
            data = "" if pd.isna(run.get(DATA)) else dataset(run, short=True)  # ml-1m
            notes = [f"data {data}" if data else "", UNEVEN if group in uneven else ""]
            first = int(in_group["t"].min()) if len(in_group) else 1
            notes.append(f"from round {first}" if first > 1 else "")
            described.append((what, group, "; ".join(filter(None, notes))))
            counts += [int(n) for n in in_group.groupby("agent", observed=True)["n"].max() if n > 0]
        changes = [true_changes.get(groups[preset], ()) for preset, _ in present]
        arguments = {"figure_spec": spec, "panels": panels, "styles": styles}
        arguments |= {"width": options.width, "changes": changes}
        caption = paper.caption(spec, described, counts, changes)
        work.figure(paper.draw, stems.new(spec.stem), arguments, caption)
    for claimed in reproduction.PAPERS:  # a claim table per paper whose presets ran
        if reproduction.present(claimed, groups):
            claims = reproduction.check(claimed, final, groups, runs)
            text, stem = reproduction.markdown(claimed, claims), stems.new(claimed.stem)
            work.sections.append(text)
            work.tables.append((claims, text, stem, []))
            work.latex[stem] = reproduction.latex(claims)


MAX_NAME = 100  # bytes of a file name, suffixes included: names a listing shows whole
LONGEST_EXTENSION = len(f".{CAPTION}")  # longer than any figure format's or table's
SUFFIX_ROOM = 28  # for the suffixes of a group's files: "-final_cum_regret" (17), …
MAX_STEM = MAX_NAME - LONGEST_EXTENSION - SUFFIX_ROOM
DIGEST = 10  # hex digits of the hash that ends a shortened name


class _Stems:
    """File name stems from titles: safe characters only, at most ``MAX_STEM`` bytes (a longer
    one is cut and ends in a hash of the whole), each once; ``suffixed`` keeps a stem and its
    suffix within ``MAX_NAME`` bytes with any extension."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.used: set[str] = set()

    def new(self, title: str) -> Path:
        base = _bounded(re.sub(r"[^A-Za-z0-9._=+-]+", "_", title).strip("_") or "results", title)
        stem, i = base, 2
        while stem in self.used:
            stem, i = f"{base}-{i}", i + 1
        self.used.add(stem)
        return self.out / stem

    @staticmethod
    def suffixed(stem: Path, suffix: str) -> Path:
        """``<stem>-<suffix>``, the suffix cut and hashed where the name would be too long."""
        room = MAX_NAME - LONGEST_EXTENSION - len(stem.name) - 1
        safe = re.sub(r"[^A-Za-z0-9._=+-]+", "_", suffix)
        return stem.with_name(f"{stem.name}-{_bounded(safe, suffix, room)}")


def _bounded(name: str, whole: str, most: int = MAX_STEM) -> str:
    """``name`` (ASCII: characters are bytes), or where it is longer than ``most`` its start
    and a hash of ``whole``, together ``most`` bytes."""
    if len(name) <= most:
        return name
    digest = hashlib.sha256(whole.encode()).hexdigest()[:DIGEST]
    return f"{name[: most - DIGEST - 1].rstrip('_')}-{digest}"
