"""What a run folder holds, and whether a run may add its seeds to it.

A folder belongs to one *result key*: a hash of the resolved config that determines the
results (everything but the ``run`` section) and of the data they were simulated on (the
ratings file's fingerprint, for environments built from data). ``config.yaml`` records the
config; every ``seed=K.json`` records the key of its seed and the size and CRC-32 of its
CSV. So every seed knows its config, even when ``config.yaml`` is lost or edited:

* a seed of this key whose CSV matches its record is *done*;
* a seed of this key whose CSV does not match (cut short, edited, flipped bits) is
  *damaged*: it is recomputed, with one line saying so; so is a seed whose record is lost,
  in a folder that is this config's (``config.yaml`` says so, or another seed's record
  does: a folder never holds two keys);
* a seed of another key, or of no known key, is *foreign*: the folder holds results of
  another config, and the run is refused in one line — they are never adopted or relabelled.

nslb never replaces a file it did not write: a folder holding files that are not nslb's
(:func:`foreign_files`) is refused.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from nslb_cli.store import parquet, provenance
from nslb_cli.store.atomic import atomic_write_text, temporary
from nslb_cli.store.results import (
    CONFIG_FILE,
    CSV,
    EVERY,
    SEED_FILE,
    SEED_STATS,
    Layout,
    flatten,
    integrity_problem,
    seed_csv,
)

CONFIG_HEADER = "# nslb: the resolved config of the results in this folder\n"
DATA_FILE = "data.json"
LOG_FILE = "nslb.log"  # Hydra's log of the job
SWEEP_FILE = "multirun.yaml"  # Hydra's record of a sweep, in the sweep folder
STUDY_FILE = "optimization_results.yaml"  # the Optuna sweeper's record of a study
BEST_FILE = "best.yaml"  # the best trial of a study (nslb_cli.runner.study)
BEST_HEADER = "# nslb: the best trial of the study in this folder\n"
PLOT_MANIFEST = ".nslb-plot.json"  # the files `nslb plot` wrote into a folder
LOCKED_NAMES = frozenset({CONFIG_FILE, DATA_FILE, provenance.FILE, parquet.FILE})
"""The files of a run folder besides the seeds' that only a holder of its lock writes."""
NSLB_NAMES = LOCKED_NAMES | {LOG_FILE, SWEEP_FILE, STUDY_FILE}
HIDDEN = re.compile(r"^\.nslb")


def written_under_lock(name: str) -> bool:
    """Whether only a holder of the folder's lock writes the file ``name`` of a run folder:
    the results, the config, the data's record and the provenance (the plots and Hydra's
    log are written without it)."""
    return _seed_file(name) or name in LOCKED_NAMES


class OutputConflict(RuntimeError):
    """A folder holds results of another configuration, or files nslb did not write."""


def result_key(
    config: dict[str, Any], fingerprint: str | None = None, engine: str | None = None
) -> str:
    """The key of results simulated with resolved ``config`` (its ``run`` section left out)
    on data of ``fingerprint`` by an engine that adds ``engine`` to its keys (the engines
    draw different numbers, so their seeds never mix in one folder; the default engine
    adds nothing): 16 hex digits of a SHA-256."""
    settings = flatten({k: v for k, v in config.items() if k != "run"})
    record: dict[str, Any] = {"config": settings, "data": fingerprint}
    if engine is not None:
        record["engine"] = engine
    text = json.dumps(record, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass
class FolderState:
    """The seeds of a folder for one result key: done, and damaged (to recompute); and its
    damaged Parquet files (their seeds unknown: the seeds asked for are recomputed)."""

    done: set[int] = field(default_factory=set)
    damaged: dict[int, str] = field(default_factory=dict)
    damaged_files: dict[str, str] = field(default_factory=dict)
    lost: set[int] = field(default_factory=set)  # the seeds damaged Parquet files name


def read_config(folder: Path) -> dict[str, Any] | None:
    """The config recorded in ``folder/config.yaml``; ``None`` when absent or unreadable
    (not UTF-8, not YAML, not a mapping)."""
    try:
        tree = yaml.safe_load((folder / CONFIG_FILE).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None
    return tree if isinstance(tree, dict) else None


def read_seed_record(folder: Path, seed: int) -> dict[str, Any] | None:
    """``seed=K.json`` of ``seed``; ``None`` when absent or unreadable."""
    try:
        record = json.loads((folder / f"seed={seed}.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def scan(
    folder: Path,
    key: str,
    config: dict[str, Any],
    data: str | None = None,
    layout: Layout = CSV,
) -> FolderState:
    """The done and damaged seeds of result key ``key`` in ``folder``, whose data record
    (``data.json``) will be ``data``, to be stored as ``layout`` says.

    Raises:
        OutputConflict: the folder holds seeds of another key (or of none known), of other
            input files than ``data`` names, or stored otherwise than ``layout`` (another
            ``run.format`` or ``run.every``), in one line saying how they differ.
    """
    seeds = sorted(int(m.group(1)) for m in _matches(folder, SEED_FILE))
    state = FolderState()
    recorded = read_config(folder)
    same_config = recorded is not None and _differences(recorded, config) == []
    records = {seed: read_seed_record(folder, seed) or {} for seed in seeds}
    # A folder holds one config's seeds: one whose record is lost is of the key the others
    # record, even when config.yaml is damaged too.
    attested = same_config or any(r.get("config") == key for r in records.values())
    foreign = []
    for seed, record in records.items():
        if record.get("config") == key or (attested and not record):
            problem = _csv_problem(folder, seed, record)
            if problem is None:
                state.done.add(seed)
            else:
                state.damaged[seed] = problem
        else:
            foreign.append(seed)
    records_pq, damaged_pq = parquet.stored(folder, state.lost)
    foreign += sorted({s for r in records_pq if r.key != key for s in r.seeds})
    if foreign:
        raise OutputConflict(_conflict(folder, foreign, recorded, config))
    stored = {Layout("csv", int(r.get(EVERY, 1))) for r in records.values()}
    stored |= {Layout("parquet", r.every) for r in records_pq}
    stored |= {Layout("parquet", layout.every) for _ in damaged_pq if layout.format != "parquet"}
    _refuse_other_layout(folder, stored, layout)
    state.done.update(seed for r in records_pq for seed in r.seeds)
    state.damaged_files = {str(p.relative_to(folder)): why for p, why in damaged_pq.items()}
    if state.done:
        _refuse_other_files(folder, data)
    return state


def _refuse_other_layout(folder: Path, stored: set[Layout], layout: Layout) -> None:
    """Refuse to add results stored as ``layout`` to a folder of results stored otherwise."""
    if not stored - {layout}:
        return
    shown = " and ".join(sorted(map(str, stored)))
    if layout in stored:  # the folder mixes layouts: nslb never does
        raise OutputConflict(
            f"{folder} holds results stored with {shown} (one config's seeds, in two "
            "forms: copied in?); a folder holds one: move one form away, pass "
            "run.overwrite=true to replace them all, or hydra.run.dir=… to write elsewhere"
        )
    raise OutputConflict(
        f"{folder} holds results stored with {shown}, and this run asks for {layout}: "
        "pass the same run.format and run.every to add seeds to them, run.overwrite=true "
        "to replace them, or hydra.run.dir=… to write elsewhere"
    )


def _refuse_other_files(folder: Path, data: str | None) -> None:
    """Refuse a folder whose ``data.json`` records other contents of the files read than
    ``data`` (the new record's text) does. The key holds the ratings' fingerprint; this
    covers the other files of a release (items, genres) in folders written before."""
    try:
        old, new = (_files(text) for text in ((folder / DATA_FILE).read_text("utf-8"), data))
    except (OSError, UnicodeDecodeError):
        return
    changed = sorted(k for k in old.keys() & new.keys() if old[k] != new[k])
    if changed:
        raise OutputConflict(
            f"{folder} holds results of other data ({', '.join(changed)} changed since: "
            f"{DATA_FILE} records another SHA-256); pass hydra.run.dir=… to write elsewhere, "
            "run.overwrite=true to replace them, or move that folder away"
        )


def _files(text: str | None) -> dict[str, Any]:
    """The SHA-256 of each file read that a data record names (empty if none)."""
    try:
        files = json.loads(text or "{}")["diagnostics"]["source"]["files"]
    except (ValueError, KeyError, TypeError):
        return {}
    return files if isinstance(files, dict) else {}


def _csv_problem(folder: Path, seed: int, record: dict[str, Any]) -> str | None:
    """Why ``seed=K.csv`` is not the file nslb wrote (its record), as a predicate ("is
    damaged: …"), or ``None``."""
    try:
        data = seed_csv(folder, seed).read_bytes()
    except OSError as err:
        return f"is unreadable ({err.strerror or err})"
    if "csv" not in record:
        return None if record else f"has no readable record (seed={seed}.json)"
    problem = integrity_problem(record["csv"], data)
    return None if problem is None else f"is {problem}"


def _conflict(
    folder: Path, foreign: list[int], recorded: dict[str, Any] | None, config: dict[str, Any]
) -> str:
    listed = _listed(foreign)
    if recorded is None:
        what = f"seeds of an unknown config ({listed}; its {CONFIG_FILE} is missing or unreadable)"
    elif changed := _differences(recorded, config):
        what = f"results of a different config (differs in: {', '.join(changed)})"
    else:
        what = f"results of other data or another config ({listed} record another key)"
    return (
        f"{folder} holds {what}; pass hydra.run.dir=… (or hydra.sweep.dir=…) to write "
        "elsewhere, run.overwrite=true to replace them, or move that folder away"
    )


def _listed(seeds: list[int]) -> str:
    """The first three of ``seeds`` as ``seed=K`` names (an ellipsis for the others)."""
    return ", ".join(f"seed={s}" for s in seeds[:3]) + (", …" if len(seeds) > 3 else "")


def refuse_other_versions(
    folder: Path, numbers: str | None = None, seeds: frozenset[int] = frozenset()
) -> None:
    """Raise :class:`OutputConflict` if another nslb version wrote results into ``folder``
    (its ``provenance.jsonl``), or, given ``numbers`` (what decides an engine's numbers
    besides that version: :func:`nslb_cli.jax_engine.coverage.numbers`), unless the entries
    record these for every one of ``seeds`` (the folder's): seeds added now would join a
    curve whose code differs."""
    this = provenance.environment()["nslb"]
    others = sorted(provenance.versions(folder) - {this})
    if others:
        raise OutputConflict(
            f"{folder} holds seeds of nslb {', '.join(others)}, and this is nslb {this}, "
            "whose numbers may differ: pass run.overwrite=true to simulate them all again "
            "with this version, or hydra.run.dir=… to write elsewhere"
        )
    if numbers is None:
        return
    found, recorded = provenance.numbers(folder)
    unknown = sorted(found - {numbers})
    if unlisted := sorted(seeds - recorded):
        unknown.append(f"{_listed(unlisted)} in no provenance.jsonl line")
    if unknown:
        raise OutputConflict(
            f"{folder} holds seeds whose numbers may have been made otherwise than this "
            f"run's, which are made by {numbers}: theirs by {'; '.join(unknown)}; pass "
            "run.overwrite=true to simulate them all again, or hydra.run.dir=… to write "
            "elsewhere"
        )


def _differences(recorded: dict[str, Any], config: dict[str, Any]) -> list[str]:
    old = flatten({k: v for k, v in recorded.items() if k != "run"})
    new = flatten({k: v for k, v in config.items() if k != "run"})
    return sorted(k for k in old.keys() | new.keys() if old.get(k) != new.get(k))


def claim(folder: Path, config: dict[str, Any]) -> None:
    """Record ``config`` as the config of the results in ``folder`` (``config.yaml``)."""
    atomic_write_text(folder / CONFIG_FILE, CONFIG_HEADER + yaml.safe_dump(config, sort_keys=False))


def restore_records(folder: Path, config: dict[str, Any], data: str | None) -> None:
    """Rewrite ``config.yaml`` and ``data.json`` (text ``data``; ``None``: no data) of a
    folder whose seeds are of this config, where they are lost, damaged or out of date."""
    recorded = read_config(folder)
    if recorded is None or _differences(recorded, config):
        claim(folder, config)
    if data is not None:
        try:
            current = (folder / DATA_FILE).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            current = None
        if current != data:
            atomic_write_text(folder / DATA_FILE, data)


def foreign_files(folder: Path) -> list[str]:
    """The files of ``folder`` that nslb did not write (sorted names; folders are never
    counted): anything but seed files, ``results.parquet`` (with nslb's record),
    ``config.yaml`` (with nslb's
    header, or beside results), ``data.json``, ``provenance.jsonl``, Hydra's ``nslb.log``,
    ``multirun.yaml`` and ``optimization_results.yaml``, a study's ``best.yaml`` (with
    nslb's header), nslb's hidden files and temporaries, and the files ``nslb plot``
    recorded writing."""
    try:
        listed = list(folder.iterdir())
    except (FileNotFoundError, NotADirectoryError):
        return []
    entries = [p for p in listed if not p.is_dir()]
    names = {p.name for p in entries}
    # a folder where nslb writes a file of that name (results.parquet/) stands in its way
    blocking = [f"{p.name}/" for p in listed if p.is_dir() and _nslb_file_name(p.name)]
    plotted = _plotted(folder)
    if parquet.FILE in names and parquet.foreign(folder / parquet.FILE):
        names.discard(parquet.FILE)  # a Parquet file without nslb's record: somebody else's
        foreign = [parquet.FILE]
    else:
        foreign = []
    has_seeds = any(SEED_FILE.match(n) for n in names) or parquet.FILE in names
    ours = [SEED_FILE, SEED_STATS, HIDDEN]
    foreign += [
        name
        for name in sorted(names)
        if not (any(p.match(name) for p in ours) or name in plotted or name in NSLB_NAMES)
        and name != BEST_FILE
        and temporary(name) is None
    ]
    if CONFIG_FILE in names and not (has_seeds or _has_header(folder / CONFIG_FILE)):
        foreign.append(CONFIG_FILE)  # a config.yaml of somebody else's, not a claim of nslb's
    if BEST_FILE in names and not _has_header(folder / BEST_FILE, BEST_HEADER):
        foreign.append(BEST_FILE)
    return sorted(foreign + blocking)


def _nslb_file_name(name: str) -> bool:
    """Whether nslb writes a file called ``name`` into a run folder."""
    return _seed_file(name) or name in NSLB_NAMES


def _seed_file(name: str) -> bool:
    """Whether ``name`` is a seed's CSV or record."""
    return bool(SEED_FILE.match(name) or SEED_STATS.match(name))


def refuse_foreign_files(folder: Path, key: str = "hydra.run.dir") -> None:
    """Raise :class:`OutputConflict` if ``folder`` holds files nslb did not write."""
    foreign = foreign_files(folder)
    if foreign:
        shown = ", ".join(foreign[:3]) + (", …" if len(foreign) > 3 else "")
        raise OutputConflict(
            f"{key}: {folder} holds files nslb did not write ({shown}), which it never "
            "replaces; choose an empty folder or one of nslb's results"
        )


def _has_header(path: Path, header: str = CONFIG_HEADER) -> bool:
    try:
        with path.open("rb") as handle:
            return handle.read(len(header)) == header.encode()
    except OSError:
        return False


def _plotted(folder: Path) -> set[str]:
    """The names ``nslb plot`` recorded writing into ``folder``."""
    try:
        files = json.loads((folder / PLOT_MANIFEST).read_text(encoding="utf-8"))["files"]
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError):
        return set()
    return {str(name) for name in files} if isinstance(files, list) else set()


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    """Hold an ``flock`` on ``folder`` itself: no lock file is left among the figures, and
    the operating system releases it when the process ends, however it ends."""
    handle = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield
    finally:
        os.close(handle)


def claim_plotted(folder: Path, names: list[str]) -> None:
    """Record that ``nslb plot`` is about to write ``names`` into ``folder`` (before it
    writes them: a plot killed half-way leaves nothing unaccounted for).

    Raises:
        OutputConflict: one of ``names`` is a file there that nslb did not write.
    """
    folder.mkdir(parents=True, exist_ok=True)
    with _locked(folder):  # concurrent plots: no record lost
        known = _plotted(folder)
        taken = [n for n in names if n not in known and (folder / n).exists()]
        if taken:
            raise OutputConflict(
                f"--out: {folder} holds {taken[0]}, which nslb did not write and never "
                "replaces; choose another --out folder, or move it away"
            )
        files = sorted(known | set(names))
        atomic_write_text(folder / PLOT_MANIFEST, json.dumps({"files": files}, indent=1) + "\n")


def _matches(folder: Path, pattern: re.Pattern[str]) -> list[re.Match[str]]:
    try:
        return [m for p in folder.iterdir() if (m := pattern.match(p.name))]
    except (FileNotFoundError, NotADirectoryError):
        return []
