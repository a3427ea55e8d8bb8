"""``nslb plot DIR [options]``: the command line of the report in ``nslb_cli.plot``."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from matplotlib.backend_bases import FigureCanvasBase

from nslb_cli.cli.errors import fail
from nslb_cli.common.paths import unwritable
from nslb_cli.plot.aggregate import CI_METHODS, DEFAULT_METRICS, DEFAULT_REFERENCE, METRICS
from nslb_cli.plot.figures import CONTEXTS
from nslb_cli.plot.layout import MAX_PIXELS
from nslb_cli.plot.paper import COLUMNS, MAX_WIDTH, MIN_WIDTH
from nslb_cli.plot.report import (
    DEFAULT_DPI,
    DEFAULT_FORMATS,
    SWEEP_LOG_X,
    Options,
    PlotError,
    plot,
)
from nslb_cli.plot.selection import rounds_range
from nslb_cli.store.folder import OutputConflict


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise PlotError(f"{message} (see `nslb plot --help`)")


def parser() -> argparse.ArgumentParser:
    """The command line of ``nslb plot``."""
    p = _Parser(
        prog="nslb plot",
        description="Figures and summary tables (markdown, CSV) for the results under DIR: "
        "one set per experiment name, environment config and data; each agent in its own "
        "colour and line style. Reads seed=K.csv files (or a results.parquet) and the "
        "config.yaml beside them (folders of equal configs are one run); never simulates.",
    )
    p.add_argument("root", metavar="DIR", type=Path, help="a folder of results, e.g. outputs/")
    p.add_argument("--out", metavar="FOLDER", help="where files go (default: DIR)")
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
    _selection(p)
    _drawing(p)
    p.add_argument(
        "--track",
        action="store_true",
        help="also log each group's figures and tables to the MLflow runs of its run folders "
        "(those run with tracking=mlflow; docs/guide/tracking.md)",
    )
    return p


def _selection(p: argparse.ArgumentParser) -> None:
    """What a report shows: agents, their labels, the reference, the rounds."""
    p.add_argument(
        "--agents",
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
        metavar="AGENT",
        help="the agent paired differences are taken against, in every group: an agent or "
        "display name (umts, umTS), a label ('umTS (num_particles=100)'), or a name with "
        "settings, 'umts(num_particles=100)', when the agent ran with several (default: "
        f"{' where one run of it is present, else '.join(DEFAULT_REFERENCE)}); 'none' for no "
        "differences. "
        "One that names no agent or several in a group is an error",
    )
    p.add_argument(
        "--rounds",
        default="",
        metavar="START:END",
        help="only rounds START…END (either may be omitted; END alone means 1:END); "
        "'final' values are then those of round END. Without START, running means "
        "(avg_reward, avg_regret) are drawn from 1%% of the horizon on (round 20 of "
        "2,000): the average of a few rounds is mostly noise",
    )


def _drawing(p: argparse.ArgumentParser) -> None:
    """How a report is drawn and written: axes, resolution, publication mode, look, tables."""
    p.add_argument("--log-x", action="store_true", help="logarithmic round axis")
    p.add_argument("--log-y", action="store_true", help="logarithmic metric axis")
    p.add_argument(
        "--no-sweep-references",
        dest="sweep_references",
        action="store_false",
        help="sweep figures: leave out the group's agents without the swept setting (drawn "
        "by default as horizontal lines with their ± SE band)",
    )
    p.add_argument(
        "--sweep-log-x",
        choices=tuple(SWEEP_LOG_X),
        default="auto",
        help="sweep figures' axis of numeric setting values above 0: logarithmic (on), linear "
        "(off), or logarithmic where the largest value is over 10 times the smallest (auto, "
        "the default)",
    )
    p.add_argument(
        "--dpi",
        type=int,
        help=f"PNG resolution (default: the style's savefig.dpi, else {DEFAULT_DPI}); an image "
        f"of more than {MAX_PIXELS:,} pixels is refused",
    )
    p.add_argument(
        "--paper",
        "--publication",
        dest="paper",
        action="store_true",
        help="publication mode: no titles drawn into figures, each figure's caption in "
        "<figure>.caption.txt beside it; and the paper's figures in its layout (figure2: "
        "regret, fixed changes; figure3: reward, Markov changes, known model and priors, "
        "sharing their y axis; figure4: MovieLens) from the runs of the paper/… presets present",
    )
    sized = p.add_mutually_exclusive_group()
    sized.add_argument(
        "--width",
        type=float,
        metavar="INCHES",
        help="with --paper: draw the paper's figures this wide, as printed: fonts of 7-8 pt, "
        "panels labelled (a), (b), one legend below them",
    )
    sized.add_argument(
        "--column",
        choices=tuple(COLUMNS),
        help="with --paper: --width of a two-column template's column (single: "
        f"{COLUMNS['single']} in) or whole text (double: {COLUMNS['double']} in)",
    )
    p.add_argument(
        "--style",
        metavar="FILE",
        help="a matplotlib style file (key: value lines, as *.mplstyle) or style name, "
        "applied over nslb's look, whole: fonts and their sizes, colours of axes and grid, "
        "line widths, savefig settings (agents keep their colours and line styles; plotting "
        "areas keep their size)",
    )
    p.add_argument(
        "--context",
        choices=CONTEXTS,
        default="paper",
        help="seaborn's plotting context: font sizes and line widths (default: %(default)s)",
    )
    p.add_argument(
        "--ci",
        choices=CI_METHODS,
        default="se",
        help="summary tables: mean ± SE and the interquartile mean (se, the default), plus a "
        "95%% bootstrap confidence interval of each mean and paired difference (bootstrap: "
        "scipy's BCa, 9,999 resamples, seeded: the same every run)",
    )
    p.add_argument(
        "--belief-seed",
        type=int,
        metavar="K",
        help="also draw, per group, the belief strip of seed K: for each agent that reports a "
        "belief, the true and the believed state against the round, and the posterior mass "
        "on the true state (<group>-belief-seed=K.png)",
    )


def parse(argv: Sequence[str]) -> Options:
    """Check the command line and return ``Options``; raise ``PlotError``."""
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
    if args.dpi is not None and args.dpi <= 0:
        raise PlotError(f"--dpi: must be > 0, got {args.dpi}")
    width = COLUMNS[args.column] if args.column else args.width
    if width is not None and not (MIN_WIDTH <= width <= MAX_WIDTH and args.paper):
        given = f"--column {args.column}" if args.column else f"--width {args.width:g}"
        raise PlotError(
            f"{given}: give it with --paper, between {MIN_WIDTH:g} and {MAX_WIDTH:g} inches"
        )
    if args.style is not None and not args.style.strip():
        raise PlotError("--style: empty; give a matplotlib style file")
    if args.root.exists() and not args.root.is_dir():
        raise PlotError(f"{args.root}: not a folder; give the folder of the results to plot")
    if args.out is not None and not args.out.strip():
        raise PlotError("--out: empty; give a folder (default: DIR)")
    out = Path(args.out).expanduser() if args.out else args.root
    reason = unwritable(out)
    if reason:
        raise PlotError(f"--out: {reason}")
    if args.agents is not None and not _items(args.agents):
        raise PlotError("--agents: empty; give agent names, e.g. --agents mts,umts")
    reference = None if args.reference is None else args.reference.strip()
    as_given = ("root", "log_x", "log_y", "dpi", "paper", "style", "context", "ci")
    return Options(
        out=out,
        formats=formats,
        metrics=metrics,
        agents=_items(args.agents or ""),
        rename=tuple(renames),
        reference="" if reference and reference.lower() == "none" else reference,
        rounds=rounds_range(args.rounds),
        width=width,
        belief_seed=args.belief_seed,
        track=args.track,
        sweep_references=args.sweep_references,
        sweep_log_x=args.sweep_log_x,
        **{name: getattr(args, name) for name in as_given},
    )


def main(argv: Sequence[str]) -> None:
    """``nslb plot``: parse, plot, report; a ``PlotError`` ends it in one line."""
    try:
        options = parse(argv)
    except PlotError as err:
        fail(str(err))
    try:
        written, sections = plot(options)
    except (PlotError, OutputConflict) as err:
        fail(str(err))
    except OSError as err:  # a full disk, a quota, a folder gone read-only; a result unreadable
        where = Path(err.filename or options.out).absolute()
        out, root = options.out.absolute(), options.root.absolute()
        reading = where.is_relative_to(root) and not where.is_relative_to(out)
        verb = "read" if reading else "write"
        fail(f"cannot {verb} {where}: {err.strerror or err}")
    print("\n".join(sections), end="")
    n_tables = sum(path.suffix in (".md", ".csv", ".tex") for path in written)
    n_captions = sum(path.name.endswith(".caption.txt") for path in written)
    captions = f", {n_captions} captions" if n_captions else ""
    print(
        f"nslb plot: wrote {len(written) - n_tables - n_captions} figure files{captions} and "
        f"{n_tables} table files to {options.out}"
    )


def _items(text: str) -> tuple[str, ...]:
    """The comma-separated items of ``text``, each once, in order (``png,png`` is ``png``)."""
    return tuple(dict.fromkeys(item.strip() for item in text.split(",") if item.strip()))
