"""Hyperparameter studies (``<sweep>/.nslb-study/<trial>.json``, one per trial a search
ran): each study's objective by trial and against each parameter, and its trials best first
(docs/guide/plotting.md). Unreadable trial files are reported in one line each; of trials that
disagree on the metric or direction, those of the most common one are kept.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import seaborn as sns  # type: ignore[import-untyped]
from matplotlib.artist import Artist
from matplotlib.cm import ScalarMappable
from matplotlib.colors import Normalize
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import MaxNLocator
from natsort import natsorted

from nslb_cli.plot import labels as lab
from nslb_cli.plot.csvread import MalformedResult, Skipped
from nslb_cli.plot.figures import PANEL, figure_legend, heading, themed
from nslb_cli.plot.layout import arrange, new_figure
from nslb_cli.plot.tables import grid
from nslb_cli.plot.tidy import walk

STUDY_FOLDER = ".nslb-study"
DIRECTIONS = ("minimize", "maximize")
TRIAL_COLOR = "#0072B2"
BEST_COLOR = "#D55E00"
TRIAL_PALETTE = "crest"  # seaborn's sequential palette: light (early trials) to dark (late)


@dataclass(frozen=True)
class Trial:
    """One trial of a search, as its file records it."""

    number: int
    overrides: tuple[str, ...]
    params: dict[str, Any]
    objective: float  # NaN: the trial failed
    metric: str
    direction: str


@dataclass
class Study:
    """The trials recorded in one folder (``folder``: relative to the results folder)."""

    folder: Path
    trials: list[Trial] = field(default_factory=list)

    @property
    def metric(self) -> str:
        return self.trials[0].metric if self.trials else ""

    @property
    def direction(self) -> str:
        return self.trials[0].direction if self.trials else DIRECTIONS[0]

    @property
    def params(self) -> list[str]:
        """The tuned parameters, in first-seen order."""
        return list(dict.fromkeys(key for trial in self.trials for key in trial.params))


def find(root: Path) -> tuple[list[Study], list[Skipped]]:
    """Every study under ``root`` (its own included), in folder order, and the files left
    out (unreadable trials; trials of another metric or direction than their study's)."""
    studies, skipped = [], []
    for folder, _ in walk(root, []):  # links followed; a loop is named by the results' walk
        if (folder / STUDY_FOLDER).is_dir():
            study, bad = read(folder / STUDY_FOLDER)
            skipped += bad
            if study.trials and best(study) is None:  # nothing to draw: say what failed
                tried = "; ".join(_tried(t) for t in study.trials[:3])
                more = "; …" if len(study.trials) > 3 else ""
                reason = f"none of its {len(study.trials)} trials finished ({tried}{more})"
                skipped.append(Skipped(folder / STUDY_FOLDER, reason))
            elif study.trials:
                study.folder = folder.relative_to(root)
                studies.append(study)
    return studies, skipped


def _tried(trial: Trial) -> str:
    """``trial 3: agent.tau=40``: a trial and the values it tried."""
    values = ", ".join(f"{k}={lab.format_value(v)}" for k, v in trial.params.items())
    return f"trial {trial.number}" + (f": {values}" if values else "")


def read(folder: Path) -> tuple[Study, list[Skipped]]:
    """The trials of one ``.nslb-study`` folder, by trial number."""
    trials, skipped = [], []
    for path in sorted(folder.glob("*.json"), key=lambda p: lab.natural(p.name)):
        try:
            trials.append(read_trial(path))
        except MalformedResult as err:
            skipped.append(Skipped(path, str(err)))
    if trials:
        common, _ = Counter((t.metric, t.direction) for t in trials).most_common(1)[0]
        for trial in trials:
            if (trial.metric, trial.direction) != common:
                reason = (
                    f"trial {trial.number} has objective {trial.metric} ({trial.direction}), "
                    f"the study's other trials {common[0]} ({common[1]}); left out"
                )
                skipped.append(Skipped(folder / f"{trial.number}.json", reason))
        trials = [t for t in trials if (t.metric, t.direction) == common]
    seen: dict[int, Trial] = {}
    for trial in sorted(trials, key=lambda t: t.number):
        seen.setdefault(trial.number, trial)
    return Study(folder.parent, list(seen.values())), skipped


def read_trial(path: Path) -> Trial:
    """One trial file, checked; ``MalformedResult`` with a one-line reason if not."""
    try:
        record = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as err:
        raise MalformedResult(f"unreadable trial record: {err}".splitlines()[0]) from None
    if not isinstance(record, dict):
        raise MalformedResult("a trial record is a JSON object")
    trial, params, objective = record.get("trial"), record.get("params"), record.get("objective")
    if not isinstance(trial, int) or isinstance(trial, bool):
        raise MalformedResult("no trial number ('trial': an integer)")
    if not isinstance(params, dict):
        raise MalformedResult("no parameters ('params': an object of key: value)")
    if objective is not None and not (
        isinstance(objective, int | float) and not isinstance(objective, bool)
    ):
        raise MalformedResult("the objective is not a number ('objective')")
    direction = record.get("direction")
    if direction not in DIRECTIONS:
        raise MalformedResult(f"'direction' must be one of {', '.join(DIRECTIONS)}")
    overrides = record.get("overrides", [])
    if not isinstance(overrides, list) or not all(isinstance(o, str) for o in overrides):
        raise MalformedResult("'overrides' is not a list of strings")
    return Trial(
        number=trial,
        overrides=tuple(overrides),
        params={str(k): lab.config_value(v) for k, v in params.items()},
        objective=float("nan") if objective is None else float(objective),
        metric=str(record.get("metric", "objective")),
        direction=str(direction),
    )


def table(study: Study) -> pd.DataFrame:
    """The trials, best first: ``rank, trial, objective``, each parameter, ``overrides``."""
    rows = [
        (t.number, t.objective, *(t.params.get(key) for key in study.params), " ".join(t.overrides))
        for t in study.trials
    ]
    frame = pd.DataFrame(rows, columns=["trial", "objective", *study.params, "overrides"])
    key = frame["objective"] if study.direction == "minimize" else -frame["objective"]
    frame = frame.assign(_key=key).sort_values(["_key", "trial"], na_position="last")
    frame = frame.drop(columns="_key").reset_index(drop=True)
    frame.insert(0, "rank", pd.array(range(1, len(frame) + 1), dtype="Int64"))
    frame.loc[frame["objective"].isna(), "rank"] = pd.NA
    return frame


def best(study: Study) -> Trial | None:
    """The trial with the best objective (the first such trial), or ``None``."""
    done = [t for t in study.trials if not math.isnan(t.objective)]
    if not done:
        return None
    pick = min if study.direction == "minimize" else max
    return pick(done, key=lambda t: t.objective)


def markdown(study: Study, trials: pd.DataFrame, title: str) -> str:
    """The study's table as markdown, headed by its objective and best trial."""
    top = best(study)
    failed = int(trials["objective"].isna().sum())
    lines = [f"### {title}", ""]
    summary = f"objective: {study.metric} ({study.direction}); {len(trials)} trials"
    summary += f" ({failed} failed)" if failed else ""
    if top is not None:
        chosen = ", ".join(f"{k}={lab.format_value(v)}" for k, v in top.params.items())
        summary += f"; best: trial {top.number}, {top.objective:.6g} ({chosen})"
    lines += [summary, ""]
    rows = [
        [
            "" if pd.isna(row["rank"]) else str(row["rank"]),
            str(row["trial"]),
            "failed" if pd.isna(row["objective"]) else f"{row['objective']:.6g}",
            *("" if lab.missing(row[key]) else lab.format_value(row[key]) for key in study.params),
        ]
        for _, row in trials.iterrows()
    ]
    header = ["rank", "trial", "objective", *study.params]
    return "\n".join(lines + grid(header, rows, "rrr" + "l" * len(study.params))) + "\n"


def objective_label(study: Study) -> str:
    return f"{study.metric} ({'lower' if study.direction == 'minimize' else 'higher'} is better)"


@themed
def history(study: Study, *, title: str = "") -> Figure:
    """The objective of each trial against its number and the best so far (a step line)."""
    figure, (axes,) = new_figure(1, PANEL)
    rows = [(t.number, t.objective) for t in study.trials]
    frame = pd.DataFrame(rows, columns=["trial", "objective"]).dropna()
    sns.scatterplot(data=frame, x="trial", y="objective", color=TRIAL_COLOR, s=18, ax=axes)
    running = np.minimum if study.direction == "minimize" else np.maximum
    so_far = running.accumulate(frame["objective"].to_numpy(float))
    axes.step(frame["trial"], so_far, where="post", color=BEST_COLOR, lw=1.4)
    entries: dict[str, Artist] = {
        "trial": Line2D([], [], color=TRIAL_COLOR, marker="o", ls="", markersize=4),
        "best so far": Line2D([], [], color=BEST_COLOR, lw=1.4),
    }
    top = best(study)
    if top is not None:
        entries |= _mark_best(axes, top, top.number)
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes.set(xlabel="trial", ylabel=objective_label(study))
    if title:
        axes.set_title(heading(f"{title}: objective by trial", ""))
    arrange(figure, [axes], PANEL, legend=figure_legend(figure, entries, title=""))
    return figure


@themed
def parameter(study: Study, key: str, *, title: str = "") -> Figure:
    """The objective against one tuned parameter, points shaded by trial number (a colour bar
    beside the plot reads the shade as the trial)."""
    figure, (axes,) = new_figure(1, PANEL)
    rows = [(t.number, t.objective, t.params.get(key)) for t in study.trials]
    frame = pd.DataFrame(rows, columns=["trial", "objective", "value"])
    frame = frame[frame["objective"].notna() & ~frame["value"].map(lab.missing)]
    values = list(frame["value"])
    numeric = bool(values) and all(lab.is_number(v) for v in values)
    palette = sns.color_palette(TRIAL_PALETTE, as_cmap=True)
    low, high = (frame["trial"].min(), frame["trial"].max()) if len(frame) else (0, 1)
    if numeric:
        x = frame["value"].astype(float)
    else:
        categories = natsorted({lab.format_value(v) for v in values})
        at = frame["value"].map(lambda v: categories.index(lab.format_value(v)))
        x = at + np.random.default_rng(0).uniform(-0.15, 0.15, len(frame))
    sns.scatterplot(
        x=x, y=frame["objective"], hue=frame["trial"], palette=palette,
        hue_norm=(low, high), s=22, legend=False, ax=axes,
    )  # fmt: skip
    if not numeric:
        axes.set_xticks(range(len(categories)), categories)
        axes.grid(False, axis="x")
    elif len(x) and (x > 0).all() and x.max() / x.min() > 10:
        axes.set_xscale("log")
    bar = axes.inset_axes((1.03, 0.0, 0.025, 1.0))  # reads each point's shade as its trial
    shades = ScalarMappable(norm=Normalize(int(low) - 0.5, int(high) + 0.5), cmap=palette)
    figure.colorbar(shades, cax=bar, label="trial")
    bar.yaxis.set_major_locator(MaxNLocator(integer=True))
    entries: dict[str, Artist] = {}
    top = best(study)
    if top is not None and not lab.missing(top.params.get(key)):
        value = top.params[key]
        x_best = float(value) if numeric else categories.index(lab.format_value(value))
        entries |= _mark_best(axes, top, x_best)
    axes.set(xlabel=key, ylabel=objective_label(study))
    if title:
        axes.set_title(heading(f"{title}: objective against {key}", ""))
    arrange(figure, [axes], PANEL, legend=figure_legend(figure, entries, title=""))
    return figure


def _mark_best(axes: Any, top: Trial, x: float) -> dict[str, Artist]:
    """The best trial ``top`` as a star at ``x``, and its legend entry."""
    axes.scatter([x], [top.objective], marker="*", s=140, color=BEST_COLOR, zorder=3)
    star = Line2D([], [], color=BEST_COLOR, marker="*", ls="", markersize=10)
    return {f"best: trial {top.number}": star}


def caption(study: Study, what: str) -> str:
    """A study figure's caption (publication mode)."""
    top = best(study)
    where = study.folder.as_posix() if str(study.folder) != "." else "(this folder)"
    text = f"Study {where}: {what}"
    text += f"; objective {study.metric}, {study.direction}d over {len(study.trials)} trials"
    if top is not None:
        text += f"; best trial {top.number} ({top.objective:.6g})"
    return text + ".\n"
