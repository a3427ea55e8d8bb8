"""Read a file of logged interactions (``env=logged``): one row per round of a sequence (a
session or a user), with the columns ``sequence, t, arm, reward``; other columns are ignored.

* Format by suffix: ``.csv`` (also ``.csv.gz``) through ``pandas.read_csv``, ``.parquet``
  through ``pandas.read_parquet``.
* Sequences are sorted by id; the rounds of a sequence are ordered by ``t`` (numbers, or
  timestamps: datetimes or ISO 8601 text; only their order counts).
* Arms: the distinct values of ``arm`` (numbers or text) in sorted order are arms ``0 .. K-1``,
  so every arm is shown at least once. An ``n_arms`` given must be ``K``: one larger says that
  some arm is never shown (named, where the arms are the indices ``0 .. n_arms-1``), and an arm
  never shown has no mean to learn.

Refused in one line naming the file and what to fix (``DataError``, a ``ConfigError``): an
unreadable file or another suffix, a missing column, an empty cell, a reward that is not a
finite number, a ``t`` that is neither that nor a timestamp, a round ``t`` twice in one
sequence, fewer than 2 arms, another number of arms than ``n_arms``, and rewards other than 0
and 1 when they are Bernoulli's. Rows are counted from 1, the header not counted.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from nslb_cli.data import DataError

COLUMNS = ("sequence", "t", "arm", "reward")
READERS = {".csv": pd.read_csv, ".csv.gz": pd.read_csv, ".parquet": pd.read_parquet}
KEY = "logs"  # the setting that names the file


@dataclass(frozen=True)
class LoggedRounds:
    """The rounds of a log file, grouped by sequence and ordered by ``t`` within each.

    Attributes:
        sequences: ``(M,)`` the sorted sequence ids.
        starts: ``(M + 1,)`` sequence ``m`` holds the rounds ``starts[m] : starts[m + 1]``.
        arms: ``(N,)`` the arm shown in each round, an index in ``0 .. K-1``.
        rewards: ``(N,)`` float64, its reward.
        rows: ``(N,)`` the file's row of each round (from 0).
        arm_values: ``(K,)`` the file's value of each arm index.
    """

    sequences: np.ndarray
    starts: np.ndarray
    arms: np.ndarray
    rewards: np.ndarray
    rows: np.ndarray
    arm_values: np.ndarray

    @property
    def n_sequences(self) -> int:
        return len(self.sequences)

    @property
    def n_arms(self) -> int:
        return len(self.arm_values)

    def rounds(self, m: int) -> tuple[np.ndarray, np.ndarray]:
        """``(arms, rewards)`` of sequence ``m``, in the order of its rounds."""
        part = slice(self.starts[m], self.starts[m + 1])
        return self.arms[part], self.rewards[part]


def read_logs(path: Path) -> LoggedRounds:
    """The logged rounds of ``path`` (module docstring), checked; ``DataError`` otherwise."""
    frame = _frame(path)
    missing = [c for c in COLUMNS if c not in frame.columns]
    if missing:
        raise _problem(path, f"no column {', '.join(missing)}: a log needs {', '.join(COLUMNS)}")
    frame = frame.loc[:, list(COLUMNS)]
    if len(frame) == 0:
        raise _problem(path, "no rows")
    empty = frame.isna().to_numpy()
    if empty.any():
        row, column = np.argwhere(empty)[0]
        raise _problem(
            path, f"row {row + 1} has no {COLUMNS[column]}: every row needs all four columns"
        )
    rounds, rewards = _numbers(path, frame, "t"), _numbers(path, frame, "reward")
    arm_values, arms = np.unique(frame["arm"].to_numpy(), return_inverse=True)
    if len(arm_values) < 2:
        raise _problem(path, f"one arm only ({_shown(arm_values[0])}): a bandit needs 2 or more")
    sequences, codes = np.unique(frame["sequence"].to_numpy(), return_inverse=True)
    codes = codes.ravel()
    order = np.lexsort((rounds, codes))
    _refuse_repeated_rounds(path, codes[order], rounds[order], order, sequences)
    starts = np.searchsorted(codes[order], np.arange(len(sequences) + 1))
    arms = arms.ravel().astype(np.int64)
    return LoggedRounds(sequences, starts, arms[order], rewards[order], order, arm_values)


def check_arms(logged: LoggedRounds, path: Path, n_arms: int | None) -> None:
    """Refuse an ``n_arms`` that is not the number of arms shown (module docstring)."""
    if n_arms is not None and n_arms != logged.n_arms:
        raise DataError("n_arms", _arm_count(path, logged.arm_values.tolist(), n_arms))


def check_clicks(logged: LoggedRounds, path: Path) -> None:
    """Refuse rewards other than 0 and 1 (Bernoulli rewards)."""
    other = np.flatnonzero(~np.isin(logged.rewards, (0.0, 1.0)))
    if len(other):
        first = other[np.argmin(logged.rows[other])]
        raise _problem(
            path,
            f"reward {logged.rewards[first]:g} in row {logged.rows[first] + 1} is not 0 or 1: "
            "Bernoulli rewards are clicks (0 or 1); use reward=gaussian for other rewards",
        )


def _problem(path: Path, message: str) -> DataError:
    return DataError(KEY, f"{path}: {message}")


def _frame(path: Path) -> pd.DataFrame:
    """The table in ``path``, read as its suffix says."""
    name = path.name.lower()
    suffix = next((s for s in READERS if name.endswith(s)), None)
    if suffix is None:
        raise _problem(path, f"not {', '.join(READERS)}: give a CSV or Parquet file")
    try:
        frame = READERS[suffix](path)
    except Exception as err:  # a parser's any error: one line
        reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise _problem(path, f"cannot read it as {suffix[1:]} ({reason})") from None
    return frame


def _numbers(path: Path, frame: pd.DataFrame, column: str) -> np.ndarray:
    """Column ``column`` as finite numbers; ``t`` may hold timestamps instead (datetimes, or
    ISO 8601 text), taken as their nanoseconds."""
    values = frame[column]
    if column == "t" and not pd.api.types.is_numeric_dtype(values):
        moments = pd.to_datetime(values, errors="coerce", format="ISO8601", utc=True)
        if not moments.isna().any():
            return moments.dt.tz_localize(None).to_numpy("datetime64[ns]").view(np.int64)
    numbers = pd.to_numeric(values, errors="coerce").to_numpy()
    with np.errstate(over="ignore", invalid="ignore"):  # EM sums squared rewards
        bad = ~np.isfinite(numbers.astype(float) ** (1 if column == "t" else 2))
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        kind = (
            "a finite number or a timestamp" if column == "t" else "a number whose square is finite"
        )
        raise _problem(
            path,
            f"{column} {_shown(values.iloc[row])} in row {row + 1} is not {kind}: "
            f"every {column} must be one",
        )
    return numbers if column == "t" else numbers.astype(np.float64)


def _arm_count(path: Path, shown: list[Any], n_arms: int) -> str:
    """Why ``n_arms`` is not the number of arms ``shown``: the first index never shown where
    the arms are indices ``0 .. n_arms - 1``, else both numbers."""
    if n_arms > len(shown) and all(_is_index(v, n_arms) for v in shown):
        never = next(a for a in range(n_arms) if a not in set(shown))
        return (
            f"{path}: arm {never} of 0..{n_arms - 1} is never shown, and an arm never shown "
            f"has no mean to learn: log it, or leave n_arms null to take the {len(shown)} shown"
        )
    return (
        f"{path}: {len(shown)} distinct arms, not n_arms={n_arms}: leave n_arms null "
        f"to take them (in sorted order, as arms 0..{len(shown) - 1})"
    )


def _shown(value: Any) -> str:
    """``value`` as the file wrote it: numpy's scalars as Python's."""
    return repr(value.item() if isinstance(value, np.generic) else value)


def _is_index(value: Any, n_arms: int) -> bool:
    """Whether ``value`` is a whole number in ``0 .. n_arms - 1``."""
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and float(value).is_integer()
        and 0 <= value < n_arms
    )


def _refuse_repeated_rounds(
    path: Path, codes: np.ndarray, rounds: np.ndarray, rows: np.ndarray, sequences: np.ndarray
) -> None:
    """Refuse a round ``t`` logged twice in one sequence (sorted ``codes`` and ``rounds``;
    ``rows`` the file's row of each)."""
    twice = np.flatnonzero((codes[1:] == codes[:-1]) & (rounds[1:] == rounds[:-1]))
    if len(twice):
        i = int(twice[0])
        first, second = sorted((int(rows[i]) + 1, int(rows[i + 1]) + 1))
        sequence, t = _shown(sequences[codes[i]]), _shown(rounds[i])
        raise _problem(
            path,
            f"sequence {sequence} logs round t={t} twice (rows {first} and {second}): "
            "a round shows one arm; drop one or number them apart",
        )
