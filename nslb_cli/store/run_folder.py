"""A run folder as one job writes it: ``RunFolder`` owns the order of the steps that
keep its promises (docs/design.md §6, *Resuming, and what a folder may hold*)."""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from nslb_cli.bandit.trace import Trace
from nslb_cli.store import parquet, provenance, staging
from nslb_cli.store.atomic import atomic_write_text, remove_stale_temporaries
from nslb_cli.store.folder import (
    DATA_FILE,
    OutputConflict,
    claim,
    read_config,
    refuse_foreign_files,
    result_key,
    written_under_lock,
)
from nslb_cli.store.lock import folder_lock
from nslb_cli.store.results import (
    CONFIG_FILE,
    EVERY,
    SEED_FILE,
    Layout,
    final_value,
    flatten,
    integrity_problem,
    seed_csv,
    seed_ranges,
    seed_record,
    write_trace,
)

log = logging.getLogger("nslb")


class RunFolder:
    """The run folder ``path`` as the job of resolved ``settings`` writes it: on ``data``, stored as
    ``layout`` says in row groups of ``batch_size`` seeds, by ``engine`` with its ``numbers``
    (``engine_name``: the engine as provenance names it). The folder is claimed with the first
    batch only."""

    def __init__(
        self,
        path: Path,
        settings: dict[str, Any],
        data: dict[str, Any] | None,
        layout: Layout,
        *,
        batch_size: int,
        engine: str | None = None,
        engine_name: str | None = None,
        numbers: str | None = None,
        overwrite: bool = False,
    ) -> None:
        self.path, self.settings, self.layout = path, settings, layout
        self.engine_name = engine_name
        self.batch_size, self.numbers, self.overwrite = batch_size, numbers, overwrite
        self.key = result_key(settings, None if data is None else data["fingerprint"], engine)
        self.data = None if data is None else json.dumps(data, indent=1, sort_keys=True) + "\n"
        self.done: set[int] = set()  # the seeds done before this job (``missing``)
        self._target = path  # where the results go: the staging folder when overwriting
        self._claimed = False

    @contextlib.contextmanager
    def open(self) -> Iterator[RunFolder]:
        """Hold the folder's lock and tidy the folder; with ``overwrite`` stage the results,
        swapped in on a clean exit, dropped otherwise."""
        with folder_lock(self.path, self.key, provenance.command()):
            staging.recover(self.path)
            remove_stale_temporaries(self.path, held=written_under_lock)
            remove_stale_temporaries(self.path / parquet.PARTS, held=lambda name: True)
            refuse_foreign_files(self.path)
            if not self.overwrite:
                yield self
                return
            try:
                self._target = staging.begin(self.path)
                yield self
            except BaseException:
                staging.abandon(self.path)
                raise
            removed = staging.commit(self.path)
            self._target = self.path  # what the folder now holds, for final_values
            if removed:
                log.warning(
                    "%s: run.overwrite removed %d old seeds this run did not simulate (%s)",
                    self.path,
                    len(removed),
                    seed_ranges(removed),
                )

    def missing(self, seeds: Iterable[int]) -> np.ndarray:
        """The seeds of ``seeds`` not done in the folder, damaged ones again; rewrites a lost record
        of done seeds. ``OutputConflict`` for seeds of another key, data, layout or version."""
        seeds = [int(seed) for seed in seeds]
        self.done, lost = self._scan()
        if left := sorted(lost - self.done - set(seeds)):  # gone when the results are sealed
            log.warning(
                "%s: seeds %s of the damaged file are lost: this run does not simulate them "
                "(run.seed and run.n_seeds choose the seeds)",
                self.path,
                seed_ranges(left),
            )
        if self.done:  # its seeds know their config: a lost or damaged record is rewritten
            self._restore_records()
        pending = np.array([s for s in seeds if s not in self.done], dtype=np.int64)
        if len(pending) and self.done:
            _refuse_other_versions(self._target, self.numbers, frozenset(self.done))
        return pending

    def write(self, seeds: np.ndarray, trace: Trace, seconds: float | None = None) -> None:
        """Write the batch of ``seeds`` played as ``trace`` in ``seconds`` of simulation and its
        provenance line (first with ``numbers``), the first claiming the folder."""
        if not self._claimed:
            claim(self._target, self.settings)
            self._restore_records()
            self._claimed = True
        listed, engine = seeds.tolist(), self.engine_name
        if self.numbers is not None:
            provenance.record(self._target, listed, self.numbers, seconds=seconds, engine=engine)
        if self.layout.format == "parquet":
            parquet.write_part(self._target, trace, self.key, self.layout.every)
        else:
            write_trace(self._target, trace, self.key, every=self.layout.every)
        if self.numbers is None:
            provenance.record(self._target, listed, seconds=seconds, engine=engine)

    def seal(self) -> None:
        """End the job's writing: the Parquet parts sealed into one file (nothing for CSVs)."""
        if self.layout.format == "parquet":
            parquet.seal(self._target, self.batch_size)

    def final_values(self, seeds: Iterable[int], column: str) -> np.ndarray:
        """The final value of ``column`` for each of ``seeds`` as written."""
        return final_values(self._target, self.layout.format, seeds, column)

    def _scan(self) -> tuple[set[int], set[int]]:
        """The done seeds of the folder's result key, and the seeds its damaged Parquet files name;
        refuses seeds of another key, data or ``layout`` (``OutputConflict``)."""
        folder, key, layout = self._target, self.key, self.layout
        try:
            names = [path.name for path in folder.iterdir()]
        except (FileNotFoundError, NotADirectoryError):
            names = []
        seeds = sorted(int(m.group(1)) for name in names if (m := SEED_FILE.match(name)))
        done: set[int] = set()
        lost: set[int] = set()  # the seeds that damaged Parquet files name
        damaged: dict[int, str] = {}
        recorded = read_config(folder)
        same_config = recorded is not None and _differences(recorded, self.settings) == []
        records = {seed: seed_record(seed_csv(folder, seed)) for seed in seeds}
        # A folder holds one config's seeds: one whose record is lost is of the key the
        # others record, even when config.yaml is damaged too.
        attested = same_config or any(r.get("config") == key for r in records.values())
        foreign = []
        for seed, record in records.items():
            if record.get("config") == key or (attested and not record):
                problem = _csv_problem(folder, seed, record)
                if problem is None:
                    done.add(seed)
                else:
                    damaged[seed] = problem
            else:
                foreign.append(seed)
        records_pq, damaged_pq = parquet.stored(folder, lost)
        foreign += sorted({s for r in records_pq if r.key != key for s in r.seeds})
        if foreign:
            raise OutputConflict(_conflict(folder, foreign, recorded, self.settings))
        stored = {Layout("csv", int(r.get(EVERY, 1))) for r in records.values()}
        stored |= {Layout("parquet", r.every) for r in records_pq}
        if damaged_pq and layout.format != "parquet":
            stored.add(Layout("parquet", layout.every))
        _refuse_other_layout(folder, stored, layout)
        done.update(seed for r in records_pq for seed in r.seeds)
        if done:
            _refuse_other_files(folder, self.data)
        for seed, problem in damaged.items():  # in the order of the seeds
            log.warning("%s: seed=%d.csv %s; simulating it again", self.path, seed, problem)
        files = {str(path.relative_to(folder)): why for path, why in damaged_pq.items()}
        for name, problem in sorted(files.items()):
            log.warning("%s: %s is %s; simulating its seeds again", self.path, name, problem)
        return done, lost

    def _restore_records(self) -> None:
        """Rewrite ``config.yaml`` and ``data.json`` where lost, damaged or out of date."""
        recorded = read_config(self._target)
        if recorded is None or _differences(recorded, self.settings):
            claim(self._target, self.settings)
        if self.data is not None:
            try:
                current = (self._target / DATA_FILE).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                current = None
            if current != self.data:
                atomic_write_text(self._target / DATA_FILE, self.data)


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
    """Refuse a folder whose ``data.json`` records other SHA-256s of the files read than
    ``data`` (the new record's text): the key covers the ratings only."""
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
    """Why ``seed=K.csv`` is not the file its record says nslb wrote ("is …"), or ``None``."""
    try:
        data = seed_csv(folder, seed).read_bytes()
    except OSError as err:
        return f"is unreadable ({err.strerror or err})"
    if not record:
        return f"has no readable record (seed={seed}.json)"
    problem = integrity_problem(record.get("csv"), data)
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


def _refuse_other_versions(folder: Path, numbers: str | None, seeds: frozenset[int]) -> None:
    """Raise ``OutputConflict`` if another nslb version wrote ``folder``'s results, or,
    given ``numbers``, unless its provenance records these for every one of ``seeds``."""
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


def final_values(folder: Path, layout: str, seeds: Iterable[int], column: str) -> np.ndarray:
    """The final value of ``column`` for each of ``seeds`` in ``folder``, written in the
    ``layout`` format (``csv`` or ``parquet``)."""
    if layout == "parquet":
        return parquet.final_values(folder, seeds, column)
    return np.array([final_value(folder, seed, column) for seed in seeds])
