"""Load an outputs tree into one tidy DataFrame: one row per (run, seed, round).

A *run* is a resolved configuration (``identity``), not a folder: folders of equal configs
are merged, a seed present in both taken from the first in sorted order. One bad file never
stops the rest; each is left out with a one-line reason in ``Loaded.skipped``.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from nslb_cli.plot import csvread, parquetread
from nslb_cli.plot.aggregate import COST
from nslb_cli.plot.csvread import Columns, MalformedResult, Skipped
from nslb_cli.plot.identity import FINGERPRINT, identity, with_data
from nslb_cli.plot.labels import ENGINE, config_value
from nslb_cli.store import parquet, provenance
from nslb_cli.store.folder import result_key
from nslb_cli.store.results import (
    COLUMNS,
    CONFIG_FILE,
    OTHER_KEY,
    SEED_FILE,
    STATS_KEYS,
    counted,
    flatten,
    seed_csv,
    seed_ranges,
    seed_record,
)

SKIPPED_SECTIONS = ("run.",)
JAX_REVISION = "JAX engine numbers"  # how the JAX engine's part of a provenance's numbers
# begins (nslb_cli.jax_engine.coverage.REVISION; that package is not imported by readers)
UNMARKED_ENGINE = "numpy"  # the run.engine whose results' keys and labels name no engine
# (nslb_cli.runner.engines: its key is None; readers do not import the runner)
YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass
class Loaded:
    """The tidy table (config columns, ``run``, ``seed``, ``t``, the CSV columns) and what was
    left out of it; ``runs`` has one row per run: its config values and ``folder``."""

    frame: pd.DataFrame
    runs: pd.DataFrame
    config_columns: list[str]
    skipped: list[Skipped] = field(default_factory=list)
    n_files: int = 0
    seed_stats: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=["run", "seed"]))
    makers: dict[str, dict[str, set[str]]] = field(default_factory=dict)  # engine -> versions


@dataclass
class _Run:
    """One resolved configuration and the seeds found for it so far."""

    config: dict[str, Any]
    folders: list[str] = field(default_factory=list)
    seeds: dict[int, Columns] = field(default_factory=dict)
    first: dict[int, Path] = field(default_factory=dict)  # seed -> the file it came from


def walk(root: Path, skipped: list[Skipped]) -> Iterator[tuple[Path, list[str]]]:
    """Every folder under ``root`` with its file names, top-down in sorted order: hidden
    folders excluded, links to folders followed, each folder once; a link to a folder above
    it (a loop) is named in ``skipped``."""
    walked: set[Path] = set()
    for name, subfolders, files in os.walk(root, followlinks=True):
        folder = Path(name)
        real = folder.resolve()
        if real in walked:
            subfolders[:] = []
            continue
        walked.add(real)
        subfolders[:] = sorted(d for d in subfolders if not d.startswith("."))
        for link in [d for d in subfolders if (folder / d).is_symlink()]:
            target = (folder / link).resolve()
            if real.is_relative_to(target):
                subfolders.remove(link)
                skipped.append(
                    Skipped(folder / link, f"a link to {target}, a folder above it (a loop)")
                )
        yield folder, files


def find_seed_files(root: Path, skipped: list[Skipped]) -> dict[Path, list[tuple[int, Path]]]:
    """Every run folder under ``root`` (``walk``) with its ``(seed, file)``s: seed CSVs or
    Parquet files; a folder holding both is named in ``skipped`` and left out."""
    runs: dict[Path, list[tuple[int, Path]]] = {}
    for folder, files in walk(root, skipped):
        seeds = sorted(
            (int(match.group(1)), folder / name)
            for name in files
            if (match := SEED_FILE.match(name))
        )
        if parquet.FILE in files or (folder / parquet.PARTS).is_dir():
            records, damaged = parquetread.stored_now(folder)
            skipped += [Skipped(path, reason) for path, reason in damaged.items()]
            in_parquet = sorted((s, r.path) for s, (r, _) in parquet.owners(records).items())
            if seeds and (in_parquet or damaged):
                skipped.append(Skipped(folder / parquet.FILE, BOTH_FORMATS))
                continue
            seeds = in_parquet
        if seeds:
            runs[folder] = seeds
    return runs


BOTH_FORMATS = (
    "beside seed=K.csv files (run.format=parquet and csv in one folder); the folder's results "
    "are skipped: move one of them away, or run it again with run.overwrite=true"
)


def read_config(folder: Path) -> tuple[dict[str, Any], str]:
    """A run folder's flattened config without its ``run`` section, with its data's identity,
    and the result key its seed files must record."""
    path = folder / CONFIG_FILE
    if not path.is_file():
        raise MalformedResult(f"no {CONFIG_FILE} in the run folder; its seeds are skipped")
    try:
        tree = yaml.load(path.read_text(), Loader=YAML_LOADER)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as err:
        raise MalformedResult(f"unreadable {CONFIG_FILE}: {csvread.message_line(err)}") from None
    if not isinstance(tree, dict):
        raise MalformedResult(f"{CONFIG_FILE} is not a mapping; its seeds are skipped")
    config = {
        key: config_value(value)
        for key, value in flatten(tree).items()
        if not key.startswith(SKIPPED_SECTIONS)
    }
    config = with_data(config, folder)
    fingerprint = config.get(FINGERPRINT)
    run = tree.get("run")
    engine = run.get("engine") if isinstance(run, dict) else None
    mark = None if engine in (None, UNMARKED_ENGINE) else str(engine)
    if mark is not None:  # another engine's seeds are other draws: another run
        config[ENGINE] = mark
    return config, result_key(tree, None if fingerprint is None else str(fingerprint), mark)


def load(
    roots: Path | Sequence[Path],
    columns: Iterable[str] = ("cum_regret", "cum_reward"),
    join_config: bool = True,
    skip: Sequence[Path] = (),
    progress: Callable[[int, int], None] | None = None,
) -> Loaded:
    """Read every seed file under ``roots`` (a run folder under two is read once) into one tidy
    table; ``join_config=False`` leaves the config columns out of ``Loaded.frame``; the run
    folders below ``skip`` are not read (a study's trials); ``progress(read, total)`` is told
    the seed files read so far before each run folder."""
    columns = [column for column in dict.fromkeys(columns) if column != "t"]
    unknown = sorted(set(columns) - set(COLUMNS))
    if unknown:
        raise ValueError(f"unknown CSV columns {unknown}; available: {', '.join(COLUMNS)}")
    runs: dict[tuple, _Run] = {}
    skipped: list[Skipped] = []
    makers: dict[str, dict[str, set[str]]] = {}
    roots = [roots] if isinstance(roots, Path) else roots
    found_in = {f: (root, s) for root in roots for f, s in find_seed_files(root, skipped).items()}
    found_in = {f: found for f, found in found_in.items() if not _below(f, skip)}
    n_files = sum(s.path.suffix == ".parquet" for s in skipped)  # damaged: none of their seeds
    total = n_files + sum(len(seeds) for _, seeds in found_in.values())
    for folder, (root, seeds) in found_in.items():
        if progress is not None:
            progress(n_files, total)
        n_files += len(seeds)
        try:
            config, key = read_config(folder)
        except MalformedResult as err:
            skipped.append(Skipped(folder / CONFIG_FILE, str(err)))
            continue
        horizon = config.get("env.horizon")
        horizon = horizon if isinstance(horizon, int) else None
        in_parquet = seeds[0][1].suffix == ".parquet"
        if in_parquet:
            found, bad = parquetread.read_run(folder, columns, horizon, key)
        else:
            found, bad = csvread.read_run(seeds, columns, horizon, key)
        others = [s for s in bad if s.reason.startswith(OTHER_KEY)]
        # some seeds record another key and none the folder's: config.yaml is what is wrong
        recorded = (seed_record(seed_csv(folder, seed)).get("config") for seed in found)
        if others and not (in_parquet and found) and key not in recorded:  # read if needed
            skipped += [s for s in bad if s not in others]
            skipped.append(Skipped(folder / CONFIG_FILE, CONTRADICTED))
            continue
        skipped += bad
        if found:
            run = runs.setdefault(identity(config), _Run(config))
            skipped += _merge(run, found, dict(seeds), str(folder.relative_to(root)))
            engine = str(config.get(ENGINE, UNMARKED_ENGINE))  # and what made its numbers
            first: dict[str, set[str]] = {"nslb versions": set(), "JAX engine revisions": set()}
            made = makers.setdefault(engine, first)
            made["nslb versions"] |= provenance.versions(folder)
            parts = (part for found in provenance.numbers(folder)[0] for part in found.split("; "))
            made["JAX engine revisions"] |= {p for p in parts if p.startswith(JAX_REVISION)}
    merged = [run for run in runs.values() if run.seeds]
    configs = [run.config for run in merged]
    keys = list(dict.fromkeys(key for config in configs for key in config))  # as first seen
    keys = sorted(keys, key=lambda key: key != "name")  # but name first
    frame = _join(merged, columns, keys if join_config else [])
    runs_table = pd.DataFrame(configs, columns=keys, dtype=object)
    runs_table["folder"] = ["; ".join(run.folders) for run in merged]
    stats = _seed_stats(merged)
    return Loaded(
        frame, runs_table, keys, skipped=skipped, n_files=n_files, seed_stats=stats, makers=makers
    )


def _below(folder: Path, folders: Sequence[Path]) -> bool:
    """Whether ``folder`` is one of ``folders`` or below one."""
    return any(folder.is_relative_to(other) for other in folders)


def mixed_makers(loaded: Loaded) -> list[str]:
    """A line per engine and maker (``Loaded.makers``) of which the loaded runs have
    several: their seeds may not be comparable."""
    return [
        f"combines {engine}-engine runs made by different {kind}: {'; '.join(sorted(values))}"
        for engine, made in loaded.makers.items()
        for kind, values in made.items()
        if len(values) > 1
    ]


CONTRADICTED = (
    "its seeds record another config (damaged or edited?); the folder's seeds are skipped "
    "until the command that wrote them runs again and restores it"
)


def _number(value: object) -> float | None:
    """A recorded statistic as a float; ``None`` for anything else, or too large for a float."""
    if not isinstance(value, int | float):
        return None
    try:
        return float(value)
    except OverflowError:
        return None


def _seed_stats(runs: list[_Run]) -> pd.DataFrame:
    """The statistics of every loaded seed, one row per (run, seed) in the frame's order,
    and ``COST`` where its provenance recorded the seconds it took to simulate."""
    in_parquet: dict[Path, dict[int, dict[str, float]]] = {}  # file -> seed -> statistics
    timed: dict[Path, dict[int, float]] = {}  # run folder -> seed -> simulation seconds
    rows = [
        {
            "run": index,
            "seed": seed,
            **_stats(run.first[seed], seed, in_parquet),
            **_cost(run, seed, timed),
        }
        for index, run in enumerate(runs)
        for seed in sorted(run.seeds)
    ]
    table = pd.DataFrame(rows, columns=list(dict.fromkeys(k for row in rows for k in row)))
    if table.empty:
        return pd.DataFrame({"run": np.array([], np.int32), "seed": np.array([], np.int32)})
    return table.astype({"run": np.int32, "seed": _seed_type(runs)})


def _seed_type(runs: list[_Run]) -> type[np.signedinteger]:
    """int32 for the seed column, int64 where a seed needs it (``run.seed`` up to 2^63 - 1)."""
    largest = max((seed for run in runs for seed in run.seeds), default=0)
    return np.int32 if largest <= np.iinfo(np.int32).max else np.int64


def _cost(run: _Run, seed: int, timed: dict[Path, dict[int, float]]) -> dict[str, float]:
    """``{COST: …}``: 1000 x the seconds ``seed`` took to simulate (its share of its batch's,
    as its folder's provenance records them) / the rounds it played; empty where unrecorded."""
    path = run.first[seed]
    folder = path.parent.parent if path.parent.name == parquet.PARTS else path.parent
    if folder not in timed:
        timed[folder] = provenance.seconds_by_seed(folder)
    seconds, horizon = timed[folder].get(seed), run.config.get("env.horizon")
    if seconds is None or not isinstance(horizon, int) or horizon < 1:
        return {}
    return {COST: 1000 * seconds / horizon}


def _stats(path: Path, seed: int, in_parquet: dict[Path, dict[int, dict[str, float]]]) -> dict:
    """The statistics of ``seed`` from ``path``: its CSV's record or its Parquet file's."""
    if path.suffix != ".parquet":  # the numbers of seed=K.json but the record's own keys
        items = seed_record(path).items()
        return {k: n for k, v in items if k not in STATS_KEYS and (n := _number(v)) is not None}
    if path.parent.name == parquet.PARTS and not path.exists():  # sealed since it was read
        path = path.parent.parent / parquet.FILE
    if path not in in_parquet:
        in_parquet[path] = {}
        with contextlib.suppress(OSError, parquet.Damaged), path.open("rb") as handle:
            record = parquet.read_record(handle, path)
            in_parquet[path] = {
                s: {k: n for k, v in record.stats.items() if (n := _number(v[i])) is not None}
                for i, s in enumerate(record.seeds)
            }
    return in_parquet[path].get(seed, {})


def _merge(
    run: _Run, found: dict[int, Columns], paths: dict[int, Path], folder: str
) -> list[Skipped]:
    """Add a folder's seeds to its run; seeds it already has, or of other rounds than its first
    seed's (another ``run.every``), are reported, not added."""
    again: dict[Path, list[int]] = {}  # folder that has the seed already -> seeds
    grid = next(iter(run.seeds.values()))["t"] if run.seeds else next(iter(found.values()))["t"]
    other = sorted(seed for seed, values in found.items() if not np.array_equal(values["t"], grid))
    for seed, values in found.items():
        if seed in run.first:
            again.setdefault(run.first[seed].parent, []).append(seed)
        elif seed not in other:
            run.seeds[seed] = values
            run.first[seed] = paths[seed]
    run.folders.append(folder)
    here = next(iter(paths.values())).parent
    skipped: list[Skipped] = []
    if other:  # seeds of other rounds than the run's
        rounds = len(found[other[0]]["t"])
        many = len(other) > 1
        numbered = f"seeds {seed_ranges(other)} keep" if many else f"seed {other[0]} keeps"
        reason = (
            f"{numbered} {counted(rounds, 'round')} of {grid[-1]}, the run's other seeds "
            f"{counted(len(grid), 'round')} (another run.every): a run's seeds are compared "
            "round by round, so these are left out; plot them apart, or run them again with "
            "the same run.every"
        )
        skipped.append(Skipped(here, reason))
    kept = "a run of the same resolved config; that one is kept"
    for there, seeds in again.items():
        which = f"seeds {seed_ranges(seeds)} are" if len(seeds) > 1 else f"seed {seeds[0]} is"
        skipped.append(Skipped(here, f"{which} also in {there}, {kept}"))
    return skipped


def _join(runs: list[_Run], columns: Sequence[str], keys: Sequence[str]) -> pd.DataFrame:
    """Stack the seed columns, with each run's values of config ``keys`` as categoricals."""
    parts: dict[str, list[np.ndarray]] = {key: [] for key in ("run", "seed", "t", *columns)}
    seed_type = _seed_type(runs)
    for index, run in enumerate(runs):
        for seed, values in sorted(run.seeds.items()):
            n = len(values["t"])
            parts["run"].append(np.full(n, index, dtype=np.int32))
            parts["seed"].append(np.full(n, seed, dtype=seed_type))
            for key in ("t", *columns):
                parts[key].append(values[key])
    empty = {"run": np.int32, "seed": np.int32, "t": np.int32}
    rows = {
        key: np.concatenate(arrays) if arrays else np.array([], dtype=empty.get(key, np.float64))
        for key, arrays in parts.items()
    }
    run_of_row = rows["run"].astype(np.intp)
    joined: dict[str, Any] = {}
    for key in keys:
        per_run = pd.Categorical([r.config.get(key) for r in runs])
        joined[key] = pd.Categorical.from_codes(per_run.codes[run_of_row], per_run.categories)
    return pd.DataFrame({**joined, **rows}, copy=False)  # copy=False: no consolidation copy
