"""Load an outputs tree into one tidy DataFrame: one row per (run folder, seed, round).

:func:`load` walks a folder for ``seed=K.csv`` files (see :mod:`nslb_cli.results`), reads
only the columns asked for, with compact dtypes, checks that each file is complete, and joins
its run folder's resolved ``config.yaml`` onto its rows as categorical columns (``name``,
``env.dynamics``, ``agent.name``, ``agent.num_particles``, …). The ``run`` section of the
config is left out: it only says which seeds a command asked for, not what they simulate.

Nothing is re-simulated and one bad file never stops the rest from loading. Skipped, each
with its path and a one-line reason in :attr:`Loaded.skipped`:

- a run folder without a readable ``config.yaml`` (its rows could not be told apart from
  another configuration's, and folder names do not hold the defaults, so they are no
  substitute);
- a CSV that cannot be parsed, lacks a needed column, has missing values in a column that
  is never empty, or is truncated: not exactly one row per round ``1 … env.horizon``.
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from nslb_cli.results import COLUMNS, CONFIG_FILE, SEED_FILE, flatten

NULLABLE = frozenset({"belief", "p_true_state"})  # empty for agents without a belief
SKIPPED_SECTIONS = ("run.",)
HEADER = (",".join(COLUMNS) + "\n").encode()


@dataclass(frozen=True)
class Skipped:
    """A file or folder left out of the table, and why."""

    path: Path
    reason: str

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"


@dataclass
class Loaded:
    """The tidy table and what was left out of it.

    ``frame`` has the config columns (categorical), then ``run`` (the run folder's row in
    ``runs``), ``seed``, ``t`` (int32) and the requested CSV columns (float32). ``runs`` has
    one row per run folder: its config values and ``folder`` (relative to the loaded root).
    ``config_columns`` lists the config columns in order.
    """

    frame: pd.DataFrame
    runs: pd.DataFrame
    config_columns: list[str]
    skipped: list[Skipped] = field(default_factory=list)
    n_files: int = 0


class MalformedResult(ValueError):
    """A seed CSV or config file that cannot be used; the message is one line."""


def find_seed_files(root: Path) -> dict[Path, list[tuple[int, Path]]]:
    """Every run folder under ``root`` (hidden folders excluded) with its ``(seed, csv)``s."""
    runs: dict[Path, list[tuple[int, Path]]] = {}
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = sorted(d for d in subfolders if not d.startswith("."))
        seeds = sorted(
            (int(match.group(1)), Path(folder, name))
            for name in files
            if (match := SEED_FILE.match(name))
        )
        if seeds:
            runs[Path(folder)] = seeds
    return runs


def read_config(folder: Path) -> dict[str, Any]:
    """The flattened resolved config of a run folder, without its ``run`` section."""
    path = folder / CONFIG_FILE
    if not path.is_file():
        raise MalformedResult(f"no {CONFIG_FILE} in the run folder; its seeds are skipped")
    try:
        tree = yaml.safe_load(path.read_text())
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as err:
        raise MalformedResult(f"unreadable {CONFIG_FILE}: {_first_line(err)}") from None
    if not isinstance(tree, dict):
        raise MalformedResult(f"{CONFIG_FILE} is not a mapping; its seeds are skipped")
    return {
        key: _scalar(value)
        for key, value in flatten(tree).items()
        if not key.startswith(SKIPPED_SECTIONS)
    }


def read_seed(path: Path, columns: Sequence[str], horizon: int | None) -> dict[str, np.ndarray]:
    """Columns ``t`` and ``columns`` of one seed CSV, checked complete; else MalformedResult."""
    try:
        frame = pd.read_csv(path, usecols=["t", *columns])
    except (ValueError, OSError) as err:  # pandas' parse errors are ValueErrors
        raise MalformedResult(f"unreadable CSV: {_first_line(err)}") from None
    return _checked(_numeric(frame), horizon)


def read_run(
    seeds: Sequence[tuple[int, Path]], columns: Sequence[str], horizon: int | None
) -> tuple[dict[int, dict[str, np.ndarray]], list[Skipped]]:
    """The seed CSVs of one run folder: ``{seed: columns}`` and the files skipped.

    Fast path: the files with the standard header and one complete line per round are
    parsed together in one ``read_csv`` call (for files of a few thousand rows the per-call
    overhead dominates, so this is several times faster than a call per file), then checked
    one by one. Every other file, or all of them when the joint parse fails, goes through
    :func:`read_seed` on its own, which says what is wrong with it.
    """
    joined: dict[int, tuple[bytes, int]] = {}  # seed -> (text, number of lines)
    alone: list[int] = []
    paths = dict(seeds)
    for seed, path in seeds:
        try:
            text = path.read_bytes()
        except OSError:
            alone.append(seed)
            continue
        lines = text.count(b"\n")
        complete = text.startswith(HEADER) and text.endswith(b"\n") and lines > 1
        if complete and (horizon is None or lines == horizon + 1):
            joined[seed] = (text, lines)
        else:
            alone.append(seed)
    found: dict[int, dict[str, np.ndarray]] = {}
    if joined:
        try:
            found = _read_joined(joined, columns, horizon)
        except MalformedResult:
            found = {}
        alone += [seed for seed in joined if seed not in found]
    skipped: list[Skipped] = []
    for seed in alone:
        try:
            found[seed] = read_seed(paths[seed], columns, horizon)
        except MalformedResult as err:
            skipped.append(Skipped(paths[seed], str(err)))
    return dict(sorted(found.items())), skipped


def _read_joined(
    texts: dict[int, tuple[bytes, int]], columns: Sequence[str], horizon: int | None
) -> dict[int, dict[str, np.ndarray]]:
    """Parse files that share :data:`HEADER` in one call; return the seeds that pass checks."""
    body = b"".join(text[len(HEADER) :] for text, _ in texts.values())
    try:
        frame = pd.read_csv(io.BytesIO(HEADER + body), usecols=["t", *columns])
    except ValueError as err:
        raise MalformedResult(_first_line(err)) from None
    lengths = [lines - 1 for _, lines in texts.values()]
    if len(frame) != sum(lengths):
        raise MalformedResult("row count differs from line count")
    arrays = _numeric(frame)
    found: dict[int, dict[str, np.ndarray]] = {}
    stops = np.cumsum(lengths)
    for seed, stop, length in zip(texts, stops, lengths, strict=True):
        part = {key: values[stop - length : stop] for key, values in arrays.items()}
        try:
            found[seed] = _checked(part, horizon)
        except MalformedResult:
            continue
    return found


def _numeric(frame: pd.DataFrame) -> dict[str, np.ndarray]:
    """The frame's columns as numpy arrays, or MalformedResult if one is not numeric."""
    for column in frame.columns:
        if not pd.api.types.is_numeric_dtype(frame[column]):
            raise MalformedResult(f"non-numeric values in column {column}")
    return {column: frame[column].to_numpy() for column in frame.columns}


def _checked(arrays: dict[str, np.ndarray], horizon: int | None) -> dict[str, np.ndarray]:
    """One seed's columns as compact arrays, or MalformedResult saying what is wrong."""
    t = arrays["t"]
    n = len(t)
    if horizon is not None and n != horizon:
        raise MalformedResult(f"truncated: {n} rounds, its config says env.horizon={horizon}")
    if not np.array_equal(t, np.arange(1, n + 1)):
        raise MalformedResult(f"column t is not the rounds 1 … {n} (truncated line?)")
    checked = {"t": t.astype(np.int32)}
    for column, values in arrays.items():
        if column == "t":
            continue
        if column not in NULLABLE and np.isnan(values).any():
            raise MalformedResult(f"missing values in column {column} (truncated line?)")
        checked[column] = values.astype(np.float32)
    return checked


def load(root: Path, columns: Iterable[str] = ("cum_regret", "cum_reward")) -> Loaded:
    """Read every seed CSV under ``root`` into one tidy table (see the module docstring)."""
    columns = list(dict.fromkeys(columns))
    unknown = sorted(set(columns) - set(COLUMNS))
    if unknown:
        raise ValueError(f"unknown CSV columns {unknown}; available: {', '.join(COLUMNS)}")
    arrays: dict[str, list[np.ndarray]] = {key: [] for key in ("run", "seed", "t", *columns)}
    configs: list[dict[str, Any]] = []
    folders: list[str] = []
    skipped: list[Skipped] = []
    n_files = 0
    for folder, seeds in find_seed_files(root).items():
        n_files += len(seeds)
        try:
            config = read_config(folder)
        except MalformedResult as err:
            skipped.append(Skipped(folder / CONFIG_FILE, str(err)))
            continue
        horizon = config.get("env.horizon")
        found, bad = read_run(seeds, columns, horizon if isinstance(horizon, int) else None)
        skipped += bad
        if not found:
            continue
        for seed, values in found.items():
            n = len(values["t"])
            arrays["run"].append(np.full(n, len(configs), dtype=np.int32))
            arrays["seed"].append(np.full(n, seed, dtype=np.int32))
            for key, column in values.items():
                arrays[key].append(column)
        configs.append(config)
        folders.append(str(folder.relative_to(root)))
    frame, keys = _join(arrays, configs)
    runs = pd.DataFrame(configs, columns=keys, dtype=object).assign(folder=folders)
    return Loaded(frame, runs, keys, skipped=skipped, n_files=n_files)


def _join(
    arrays: dict[str, list[np.ndarray]], configs: list[dict[str, Any]]
) -> tuple[pd.DataFrame, list[str]]:
    """Stack the seed columns and add each run's config values as categorical columns."""
    rows = {
        key: np.concatenate(parts) if parts else np.array([], dtype=np.float32)
        for key, parts in arrays.items()
    }
    run = rows["run"].astype(np.intp)
    keys = _ordered_keys(configs)
    joined: dict[str, Any] = {}
    for key in keys:
        per_run = pd.Categorical([config.get(key) for config in configs])
        joined[key] = pd.Categorical.from_codes(per_run.codes[run], per_run.categories)
    return pd.DataFrame({**joined, **rows}), keys


def _ordered_keys(configs: list[dict[str, Any]]) -> list[str]:
    """Config keys in first-seen order, ``name`` first."""
    keys = list(dict.fromkeys(key for config in configs for key in config))
    return sorted(keys, key=lambda key: key != "name")


def _scalar(value: Any) -> Any:
    """Config values as categories: lists and mappings become their YAML text."""
    if isinstance(value, list | dict):
        return yaml.safe_dump(value, default_flow_style=True).strip()
    return value


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__
