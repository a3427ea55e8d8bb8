"""``nslb plot DIR``: figures and summary tables for whatever results are under DIR.

The pipeline runs one way: :mod:`nslb_cli.tidy` loads the per-seed CSVs and their configs,
:mod:`nslb_cli.labels` names groups and agents, :mod:`nslb_cli.aggregate` computes the
statistics, :mod:`nslb_cli.figures` and :mod:`nslb_cli.tables` draw and write them. Nothing
is simulated. Per group (an experiment ``name`` and environment config), into ``--out``:

- ``<group>-<metric>.<fmt>``: each metric against the round, mean ± SE per agent;
- ``<group>-final_cum_regret.<fmt>``: final cumulative regret per agent, one dot per seed;
- ``<group>-summary.md`` / ``.csv``: seeds, final regret and reward, paired difference.

Per experiment name, for every swept setting: ``<name>-sweep-<setting>.<fmt>``. Over all
groups: ``summary.md`` and ``summary.csv``.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from matplotlib.backend_bases import FigureCanvasBase

from nslb_cli import aggregate, figures, tables, tidy
from nslb_cli import labels as lab
from nslb_cli.aggregate import METRICS, PAIRED_METRIC, SUMMARY_METRICS

DEFAULT_METRICS = ("cum_regret", "avg_reward")
DEFAULT_FORMATS = ("png", "pdf")
DEFAULT_REFERENCE = "mts"


class PlotError(Exception):
    """A problem with the command line or the results folder; the message is one line."""


@dataclass(frozen=True)
class Options:
    """What ``nslb plot`` was asked for (see :func:`parser` for the meaning of each)."""

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


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise PlotError(f"{message} (see `nslb plot --help`)")


def parser() -> argparse.ArgumentParser:
    """The command line of ``nslb plot``."""
    p = _Parser(
        prog="nslb plot",
        description="Figures and summary tables (markdown, CSV) for the results under DIR: "
        "one set per experiment name and environment config, agents as colours. "
        "Reads seed=K.csv files and the config.yaml beside them; never simulates.",
    )
    p.add_argument("root", metavar="DIR", type=Path, help="a folder of results, e.g. outputs/")
    p.add_argument("--out", metavar="FOLDER", type=Path, help="where files go (default: DIR)")
    p.add_argument(
        "--format",
        default=",".join(DEFAULT_FORMATS),
        help="figure formats, comma-separated (default: %(default)s; also svg, jpg, …)",
    )
    p.add_argument(
        "--metric",
        default=",".join(DEFAULT_METRICS),
        help=f"per-round metrics to draw, comma-separated (default: %(default)s); "
        f"one of {', '.join(METRICS)}",
    )
    p.add_argument(
        "--agents",
        default="",
        help="only these agents, in this legend order, comma-separated agent or display "
        "names (default: all, in the paper's order)",
    )
    p.add_argument(
        "--rename",
        action="append",
        default=[],
        metavar="AGENT=LABEL",
        help="show AGENT (agent or display name) as LABEL; repeatable",
    )
    p.add_argument(
        "--reference",
        help=f"agent that paired differences are taken against (default: {DEFAULT_REFERENCE}, "
        "when present); 'none' for no differences",
    )
    p.add_argument(
        "--rounds",
        default="",
        metavar="START:END",
        help="only rounds START…END (either may be omitted; END alone means 1:END); "
        "'final' values are then those of round END",
    )
    p.add_argument("--log-x", action="store_true", help="logarithmic round axis")
    p.add_argument("--log-y", action="store_true", help="logarithmic metric axis")
    p.add_argument("--dpi", type=int, default=150, help="PNG resolution (default: %(default)s)")
    return p


def parse(argv: Sequence[str]) -> Options:
    """Check the command line and return :class:`Options`; raise :class:`PlotError`."""
    args = parser().parse_args(argv)
    formats = _items(args.format)
    supported = FigureCanvasBase.get_supported_filetypes()
    bad = [f for f in formats if f not in supported]
    if bad or not formats:
        raise PlotError(f"--format: unsupported {bad}; choose from {', '.join(supported)}")
    metrics = _items(args.metric)
    bad = [m for m in metrics if m not in METRICS]
    if bad or not metrics:
        raise PlotError(f"--metric: unknown {bad}; choose from {', '.join(METRICS)}")
    renames = []
    for item in args.rename:
        old, sep, new = item.partition("=")
        if not (sep and old.strip() and new.strip()):
            raise PlotError(f"--rename: expected AGENT=LABEL, got '{item}'")
        renames.append((old.strip(), new.strip()))
    if args.dpi <= 0:
        raise PlotError(f"--dpi: must be > 0, got {args.dpi}")
    return Options(
        root=args.root,
        out=args.out or args.root,
        formats=formats,
        metrics=metrics,
        agents=_items(args.agents),
        rename=tuple(renames),
        reference=None if args.reference is None else _none_or(args.reference),
        rounds=_rounds(args.rounds),
        log_x=args.log_x,
        log_y=args.log_y,
        dpi=args.dpi,
    )


def main(argv: Sequence[str]) -> None:
    """``nslb plot``: parse, plot, report; :class:`PlotError` for the caller to print."""
    options = parse(argv)
    written, sections = plot(options)
    print("\n".join(sections), end="")
    n_tables = sum(path.suffix in (".md", ".csv") for path in written)
    print(
        f"nslb plot: wrote {len(written) - n_tables} figure files and {n_tables} table "
        f"files to {options.out}"
    )


def plot(options: Options) -> tuple[list[Path], list[str]]:
    """Load, aggregate, draw and write; return the files written and the markdown sections."""
    frame, runs = _load(options)
    rename = dict(options.rename)
    frame, runs = aggregate.labelled(frame, runs, rename, _order(runs, options.agents))
    final = aggregate.finals(frame)
    reference = DEFAULT_REFERENCE if options.reference is None else options.reference
    summary = aggregate.summary(final, reference or None)
    if options.reference and not summary["reference"].any():
        _warn(f"--reference: no single agent '{options.reference}' in any group; no differences")
    per_round = {name: aggregate.per_round(frame, METRICS[name]) for name in options.metrics}
    colors = figures.palette(list(dict.fromkeys(runs["agent"])))
    options.out.mkdir(parents=True, exist_ok=True)
    stems = _Stems(options.out)
    written: list[Path] = []
    sections: list[str] = []
    for group in dict.fromkeys(runs["group"]):
        stem = stems.new(group)
        for name, stats in per_round.items():
            figure = figures.curves(
                stats[stats["group"] == group],
                value_label=METRICS[name].label,
                title=group,
                colors=colors,
                log_x=options.log_x,
                log_y=options.log_y,
            )
            written += figures.save(figure, _suffixed(stem, name), **_fmt(options))
        in_group = final[final["group"] == group]
        last = in_group["t"].max()
        figure = figures.final_distribution(
            in_group,
            value=PAIRED_METRIC,
            value_label=f"final {METRICS[PAIRED_METRIC].label} (round {last})",
            title=group,
            colors=colors,
        )
        written += figures.save(figure, _suffixed(stem, f"final_{PAIRED_METRIC}"), **_fmt(options))
        details = (
            f"environment: {lab.environment(runs[runs['group'] == group].iloc[0])}; values at "
            f"round {last}, mean ± SE over seeds; Δ: difference to the reference on the same seeds"
        )
        rows = summary[summary["group"] == group]
        sections.append(tables.markdown(rows, title=group, details=details))
        written += tables.write(rows, sections[-1], _suffixed(stem, "summary"))
    written += _sweeps(final, runs, rename, stems, options)
    written += tables.write(summary, "\n".join(sections), options.out / "summary")
    return written, sections


def _load(options: Options) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The selected rows and runs; skipped files are reported on stderr, one line each."""
    if not options.root.is_dir():
        raise PlotError(f"{options.root}: no such folder")
    columns = {METRICS[name].column for name in (*options.metrics, *SUMMARY_METRICS)}
    loaded = tidy.load(options.root, sorted(columns))
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
    if options.agents:
        names = runs[lab.AGENT].map(str)
        shown = names.map(lab.display_name)
        missing = [a for a in options.agents if not ((names == a) | (shown == a)).any()]
        if missing:
            present = ", ".join(sorted(set(names)))
            raise PlotError(f"--agents: no results for {', '.join(missing)}; present: {present}")
        runs = runs[names.isin(options.agents) | shown.isin(options.agents)]
    start, end = options.rounds
    keep = frame["run"].isin(runs.index)
    if start is not None:
        keep &= frame["t"] >= start
    if end is not None:
        keep &= frame["t"] <= end
    frame = frame[keep]
    if frame.empty:
        raise PlotError(f"--rounds: no results in rounds {start or 1}…{end or 'end'}")
    return frame, runs.loc[frame["run"].unique()]


def _sweeps(
    final: pd.DataFrame,
    runs: pd.DataFrame,
    rename: dict[str, str],
    stems: _Stems,
    options: Options,
) -> list[Path]:
    """Final regret against each swept setting, per experiment name (own colours: the
    labels differ from the groups' since the swept setting is on the x axis)."""
    written: list[Path] = []
    runs = runs.drop(columns=aggregate.KEYS)  # labels of the groups' figures, not settings
    names = runs[lab.NAME].map(lab.format_value)
    for name, settings in lab.swept_parameters(runs).items():
        in_name = runs[names == name]
        for setting in settings:
            has = in_name[setting].notna()
            with_setting, without = in_name[has], in_name[~has]
            hue = lab.agent_labels(with_setting, [lab.NAME], rename, exclude=[setting])
            keys = {"agent": hue, "x": with_setting[setting]}
            points = aggregate.by_run_keys(final, keys, PAIRED_METRIC)
            references = None
            if not without.empty:
                others = lab.agent_labels(without, [lab.NAME], rename, exclude=[setting])
                references = aggregate.by_run_keys(final, {"agent": others}, PAIRED_METRIC)
            shown = [*hue, *([] if references is None else references["agent"])]
            figure = figures.sweep(
                points,
                parameter=setting,
                value_label=f"final {METRICS[PAIRED_METRIC].label}",
                title=name,
                colors=figures.palette(list(dict.fromkeys(shown))),
                references=references,
            )
            stem = stems.new(f"{name}-sweep-{lab.short_key(setting)}")
            written += figures.save(figure, stem, **_fmt(options))
    return written


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


def _fmt(options: Options) -> dict[str, object]:
    return {"formats": options.formats, "dpi": options.dpi}


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


def _none_or(text: str) -> str:
    return "" if text.strip().lower() == "none" else text.strip()


def _items(text: str) -> tuple[str, ...]:
    return tuple(item.strip() for item in text.split(",") if item.strip())


def _rounds(text: str) -> tuple[int | None, int | None]:
    """``START:END``, ``START:``, ``:END`` or ``END`` -> (start, end), checked."""
    if not text.strip():
        return None, None
    start_text, sep, end_text = text.partition(":") if ":" in text else ("", ":", text)
    try:
        start = int(start_text) if start_text.strip() else None
        end = int(end_text) if end_text.strip() else None
    except ValueError:
        raise PlotError(f"--rounds: expected START:END with whole numbers, got '{text}'") from None
    if (start is not None and start < 1) or (end is not None and end < 1):
        raise PlotError(f"--rounds: rounds start at 1, got '{text}'")
    if start is not None and end is not None and start > end:
        raise PlotError(f"--rounds: START must not exceed END, got '{text}'")
    return start, end


def _warn(message: str) -> None:
    print(f"nslb plot: {message}", file=sys.stderr)
