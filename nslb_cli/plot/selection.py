"""Which results a report or a frame keeps: the agents and rounds asked for, refused in one
line when the results have none (also for ``nslb_cli.load_results``, which must not load
the plotting libraries).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pandas as pd

from nslb_cli.plot import labels as lab


class PlotError(ValueError):
    """A problem with the command line or the results folder; the message is one line (a
    ``ValueError`` for ``nslb_cli.load_results``, which refuses the same)."""


def select(
    frame: pd.DataFrame,
    runs: pd.DataFrame,
    agents: Sequence[str],
    rounds: tuple[int | None, int | None],
    warn: Callable[[str], None],
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The rows and runs of ``agents`` (agent or display names; all when empty) in rounds
    ``START…END``: an agent with no results, or a bound past the last round, is a
    ``PlotError``; a run with no rounds in the range is left out with ``warn``."""
    if agents:
        names = runs[lab.AGENT].map(str)
        shown = names.map(lab.display_name)
        missing = [a for a in agents if not ((names == a) | (shown == a)).any()]
        if missing:
            present = ", ".join(sorted(set(names)))
            raise PlotError(f"--agents: no results for {', '.join(missing)}; present: {present}")
        runs = runs[names.isin(agents) | shown.isin(agents)]
    start, end = rounds
    last = int(frame["t"].max())
    for bound, name in ((start, "START"), (end, "END")):
        if bound is not None and bound > last:
            raise PlotError(
                f"--rounds: {name} {bound} is past the last round of the results ({last})"
            )
    keep = frame["run"].isin(runs.index)
    if end is not None:  # an END between two rounds a run kept (run.every) is refused
        t, run = frame.loc[keep, "t"].to_numpy(), frame.loc[keep, "run"].to_numpy()
        unkept = sorted(set(run[t > end].tolist()) - set(run[t == end].tolist()))
        if unkept:  # its final values would be of an earlier round than the others'
            before = int(t[(run == unkept[0]) & (t < end)].max(initial=0))
            after = int(t[(run == unkept[0]) & (t > end)].min())
            folder = runs.loc[unkept[0], lab.FOLDER]
            raise PlotError(
                f"--rounds: END {end} is not a round that {folder} kept (run.every): its "
                f"rounds about it are {before} and {after}; choose one of them"
            )
        keep &= frame["t"] <= end
    if start is not None:
        keep &= frame["t"] >= start
    frame = frame[keep]
    if frame.empty:
        raise PlotError(f"--rounds: no results in rounds {start or 1}…{end or 'end'}")
    kept = frame["run"].unique()
    for folder in runs.loc[runs.index.difference(kept), lab.FOLDER]:
        warn(f"left out {folder}: no rounds in {start or 1}…{end or 'end'} (--rounds)")
    return frame, runs.loc[kept]


def rounds_range(rounds: object) -> tuple[int | None, int | None]:
    """``START:END``, ``START:``, ``:END`` or ``END`` (text), ``END`` or ``(START, END)``
    (whole numbers, either ``None``) as ``(start, end)``, checked: rounds start at 1, START
    does not exceed END; a ``PlotError`` otherwise."""
    if rounds is None or (isinstance(rounds, str) and not rounds.strip()):
        return None, None
    if isinstance(rounds, str):
        first, _, last = rounds.partition(":") if ":" in rounds else ("", ":", rounds)
        bounds: tuple[object, object] = (first.strip() or None, last.strip() or None)
    elif isinstance(rounds, tuple) and len(rounds) == 2:
        bounds = rounds
    else:
        bounds = (None, rounds)
    try:
        start, end = (None if b is None else _whole(b) for b in bounds)
    except ValueError:
        raise PlotError(
            f"--rounds: expected START:END with whole numbers, got '{rounds}'"
        ) from None
    if (start is not None and start < 1) or (end is not None and end < 1):
        raise PlotError(f"--rounds: rounds start at 1, got '{rounds}'")
    if start is not None and end is not None and start > end:
        raise PlotError(f"--rounds: START must not exceed END, got '{rounds}'")
    return start, end


def _whole(value: object) -> int:
    """``value`` as a whole number: an int (not a bool) or its decimal text; else ValueError."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ValueError(value)
    return int(value)
