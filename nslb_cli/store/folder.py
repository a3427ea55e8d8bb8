"""The files of a run folder (docs/design.md §6): their names, the *result key* they record,
and the files nslb did not write, which it never replaces."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

import yaml

from nslb_cli.store import parquet, provenance
from nslb_cli.store.atomic import atomic_write_text, temporary
from nslb_cli.store.results import CONFIG_FILE, SEED_FILE, SEED_STATS, flatten, read_json

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
    """Whether only a holder of the folder's lock writes the file ``name`` of a run folder."""
    return bool(SEED_FILE.match(name) or SEED_STATS.match(name)) or name in LOCKED_NAMES


class OutputConflict(RuntimeError):
    """A folder holds results of another configuration, or files nslb did not write."""


def result_key(
    config: dict[str, Any], fingerprint: str | None = None, engine: str | None = None
) -> str:
    """The key of results of resolved ``config`` (but its ``run`` section) on data of
    ``fingerprint`` by an engine adding ``engine`` (the default adds none): 16 hex digits."""
    settings = flatten({k: v for k, v in config.items() if k != "run"})
    record: dict[str, Any] = {"config": settings, "data": fingerprint}
    if engine is not None:
        record["engine"] = engine
    text = json.dumps(record, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def read_config(folder: Path) -> dict[str, Any] | None:
    """The config recorded in ``folder/config.yaml``; ``None`` when absent or unreadable
    (not UTF-8, not YAML, not a mapping)."""
    try:
        tree = yaml.safe_load((folder / CONFIG_FILE).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None
    return tree if isinstance(tree, dict) else None


def claim(folder: Path, config: dict[str, Any]) -> None:
    """Record ``config`` as the config of the results in ``folder`` (``config.yaml``)."""
    atomic_write_text(folder / CONFIG_FILE, CONFIG_HEADER + yaml.safe_dump(config, sort_keys=False))


def refuse_foreign_files(folder: Path, key: str = "hydra.run.dir") -> None:
    """Raise ``OutputConflict`` if ``folder`` holds files nslb did not write
    (docs/design.md §6); folders are not counted unless named as a file nslb writes."""
    try:
        listed = list(folder.iterdir())
    except (FileNotFoundError, NotADirectoryError):
        return
    entries = [p for p in listed if not p.is_dir()]
    names = {p.name for p in entries}
    # a folder where nslb writes a file of that name (results.parquet/) stands in its way
    blocking = [f"{p.name}/" for p in listed if p.is_dir() and _nslb_file(p.name)]
    plotted = _plotted(folder)
    foreign = []
    if parquet.FILE in names and parquet.foreign(folder / parquet.FILE):
        names.discard(parquet.FILE)  # a Parquet file without nslb's record: somebody else's
        foreign.append(parquet.FILE)
    has_seeds = any(SEED_FILE.match(n) for n in names) or parquet.FILE in names
    foreign += [
        name
        for name in sorted(names)
        if not (_nslb_file(name) or HIDDEN.match(name) or name in plotted or name == BEST_FILE)
        and temporary(name) is None
    ]
    if CONFIG_FILE in names and not (has_seeds or _has_header(folder / CONFIG_FILE)):
        foreign.append(CONFIG_FILE)  # a config.yaml of somebody else's, not a claim of nslb's
    if BEST_FILE in names and not _has_header(folder / BEST_FILE, BEST_HEADER):
        foreign.append(BEST_FILE)
    if foreign := sorted(foreign + blocking):
        shown = ", ".join(foreign[:3]) + (", …" if len(foreign) > 3 else "")
        raise OutputConflict(
            f"{key}: {folder} holds files nslb did not write ({shown}), which it never "
            "replaces; choose an empty folder or one of nslb's results"
        )


def _nslb_file(name: str) -> bool:
    """Whether nslb writes a file called ``name`` into a run folder."""
    return written_under_lock(name) or name in NSLB_NAMES


def _has_header(path: Path, header: str = CONFIG_HEADER) -> bool:
    try:
        with path.open("rb") as handle:
            return handle.read(len(header)) == header.encode()
    except OSError:
        return False


def _plotted(folder: Path) -> set[str]:
    """The names ``nslb plot`` recorded writing into ``folder``."""
    record = read_json(folder / PLOT_MANIFEST)
    files = record.get("files") if isinstance(record, dict) else None
    return {str(name) for name in files} if isinstance(files, list) else set()


def claim_plotted(folder: Path, names: list[str]) -> None:
    """Record that ``nslb plot`` is about to write ``names`` into ``folder`` (before: a plot
    killed half-way leaves nothing unaccounted for); refuse a file there nslb did not write."""
    folder.mkdir(parents=True, exist_ok=True)
    handle = os.open(folder, os.O_RDONLY)  # an flock on the folder: no lock file among figures
    try:
        fcntl.flock(handle, fcntl.LOCK_EX)  # concurrent plots: no record lost
        known = _plotted(folder)
        taken = [n for n in names if n not in known and (folder / n).exists()]
        if taken:
            raise OutputConflict(
                f"--out: {folder} holds {taken[0]}, which nslb did not write and never "
                "replaces; choose another --out folder, or move it away"
            )
        files = sorted(known | set(names))
        atomic_write_text(folder / PLOT_MANIFEST, json.dumps({"files": files}, indent=1) + "\n")
    finally:
        os.close(handle)
