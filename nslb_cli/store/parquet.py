"""A job's results in one Parquet file (``run.format=parquet``), written whole and resumably
(docs/design.md §6): parts of each batch in ``.nslb-parts/``, sealed into ``results.parquet``,
whose footer's record ends with the CRC-32 of the whole file."""

from __future__ import annotations

import json
import os
import shutil
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import pyarrow as pa

from nslb_cli.bandit.trace import Trace
from nslb_cli.store.atomic import atomic_write, fsync_folder
from nslb_cli.store.results import arrow_table, strict, trace_columns

FILE = "results.parquet"
PARTS = ".nslb-parts"  # the finished batches of a job not yet sealed into FILE
RECORD = b"nslb"  # the footer's key-value entry of nslb's record
SEAL = "file_crc32"  # the record's field of the whole file's CRC-32
UNSEALED = "00000000"  # what the CRC-32 is computed with in place of its own digits
COMPRESSION = "zstd"
# dictionary encoded (few values, many rows); the floats' dictionaries would cost 4x the time
DICTIONARY = ["seed", "t", "action", "state", "belief"]
CHUNK = 1 << 23  # bytes read at a time to check a file's CRC-32


class Damaged(ValueError):
    """A Parquet file that is not whole results of nslb's (``seeds``: those its record names)."""

    def __init__(self, message: str, seeds: Iterable[int] = ()) -> None:
        super().__init__(message)
        self.seeds = tuple(seeds)


class Changed(Damaged):
    """A file replaced between the reading of its record and of its rows: to read again."""


@dataclass(frozen=True)
class Record:
    """What a Parquet file of results records about itself (checked against its bytes)."""

    path: Path
    key: str
    every: int
    seeds: list[int]
    stats: dict[str, list[Any]]
    rows: int  # rows per seed: the rounds kept


class _Checksummed:
    """A binary file that checksums what is written, keeping what follows ``keep``."""

    def __init__(self, handle: BinaryIO) -> None:
        self.handle, self.size, self.crc, self.closed = handle, 0, 0, False
        self.kept: bytearray | None = None
        self.kept_from = 0

    def write(self, data: bytes) -> int:
        self.handle.write(data)
        self.size += len(data)
        self.crc = zlib.crc32(data, self.crc)
        if self.kept is not None:
            self.kept += data
        return len(data)

    def keep(self) -> None:
        self.kept, self.kept_from = bytearray(), self.size

    def tell(self) -> int:
        return self.size

    def flush(self) -> None:
        self.handle.flush()

    def close(self) -> None:
        self.closed = True


def batch_table(trace: Trace, every: int = 1) -> pa.Table:
    """The rows of every run of ``trace``: ``seed``, then ``trace_columns``."""
    columns = trace_columns(trace, slice(None), every)
    runs, rounds = columns["reward"].shape
    rows = {"seed": np.repeat(np.asarray(trace.seeds, np.int64), rounds)}
    rows["t"] = np.tile(columns.pop("t"), runs)
    return arrow_table(rows | {name: values.ravel() for name, values in columns.items()})


def write_part(folder: Path, trace: Trace, key: str, every: int) -> None:
    """Write the runs of ``trace`` (a batch) as a part of ``folder``'s results, atomically."""
    seeds = [int(seed) for seed in trace.seeds]
    stats = {name: strict(values.tolist()) for name, values in trace.summary.items()}
    parts = folder / PARTS
    path = parts / f"seeds={seeds[0]}-{seeds[-1]}.parquet"
    _write(path, [batch_table(trace, every)], {"config": key, "every": every,
                                               "seeds": seeds, "stats": stats})  # fmt: skip
    fsync_folder(parts)


def _write(path: Path, tables: Iterable[pa.Table], record: dict[str, Any]) -> None:
    """Write ``tables`` (a row group each) and ``record``, sealed, to ``path`` atomically."""

    def write(handle: BinaryIO) -> None:
        import pyarrow.parquet as pq  # here: a run writing CSVs never loads it (16 ms)

        sink = _Checksummed(handle)
        writer: pq.ParquetWriter | None = None
        for table in tables:
            if writer is None:
                writer = pq.ParquetWriter(
                    sink, table.schema, compression=COMPRESSION, use_dictionary=DICTIONARY
                )
            writer.write_table(table, row_group_size=max(table.num_rows, 1))
        assert writer is not None, "no rows to write"
        writer.add_key_value_metadata({RECORD: json.dumps(record)[:-1] + _seal(UNSEALED) + "}"})
        sink.keep()
        writer.close()
        assert sink.kept is not None
        handle.seek(sink.kept_from + sink.kept.index(_seal(UNSEALED).encode()))
        handle.write(_seal(f"{sink.crc:08x}").encode())  # the same length: the footer holds
        handle.seek(0, os.SEEK_END)

    atomic_write(path, write)


def _seal(crc: str) -> str:
    """The record's last field: the whole file's CRC-32."""
    return f', "{SEAL}": "{crc}"'


def read_record(handle: BinaryIO, path: Path) -> Record:
    """The record of the Parquet file open as ``handle`` (``path``), checked against its bytes."""
    import pyarrow.parquet as pq

    size = os.fstat(handle.fileno()).st_size
    try:
        meta = pq.read_metadata(handle)
        raw = json.loads((meta.metadata or {})[RECORD])
        seeds, stats = [int(s) for s in raw["seeds"]], dict(raw["stats"])
        key, every, crc = str(raw["config"]), int(raw["every"]), str(raw[SEAL])
    except KeyError:
        raise Damaged("not nslb's results (no record of nslb's in its footer)") from None
    except (pa.ArrowException, OSError, ValueError, TypeError) as err:
        first = (str(err).strip().splitlines() or [type(err).__name__])[0]
        raise Damaged(f"damaged: not a whole Parquet file of nslb's ({first})") from None
    footer = meta.serialized_size + 8  # the footer, its length and the magic bytes
    handle.seek(0)
    found = 0
    for _ in range(0, size - footer, CHUNK):
        found = zlib.crc32(handle.read(min(CHUNK, size - footer - handle.tell())), found)
    tail = handle.read().replace(_seal(crc).encode(), _seal(UNSEALED).encode(), 1)
    if f"{zlib.crc32(tail, found):08x}" != crc:
        computed = f"{zlib.crc32(tail, found):08x}"
        raise Damaged(f"damaged: CRC-32 {computed}, but nslb wrote {crc}", seeds)
    if not seeds or meta.num_rows % len(seeds) or any(len(v) != len(seeds) for v in stats.values()):
        raise Damaged("damaged: its record's seeds do not match its rows")
    if len(set(seeds)) != len(seeds):
        raise Damaged("damaged: its record names a seed twice")
    return Record(path, key, every, seeds, stats, meta.num_rows // len(seeds))


def foreign(path: Path) -> bool:
    """Whether ``path`` is a readable Parquet file without nslb's record (an unreadable footer
    may be nslb's, damaged)."""
    import pyarrow.parquet as pq

    try:
        meta = pq.read_metadata(path)
    except (pa.ArrowException, OSError, ValueError):
        return False
    return RECORD not in (meta.metadata or {})


def stored(folder: Path, lost: set[int] | None = None) -> tuple[list[Record], dict[Path, str]]:
    """The checked records of ``folder``'s Parquet files, and the damaged ones with their reason,
    their seeds added to ``lost``. A file gone once listed raises ``FileNotFoundError``."""
    records, damaged = [], {}
    sealed = [folder / FILE] if (folder / FILE).is_file() else []
    for path in sealed + sorted((folder / PARTS).glob("*.parquet")):
        try:
            with path.open("rb") as handle:
                records.append(read_record(handle, path))
        except Damaged as err:
            damaged[path] = str(err)
            if lost is not None:
                lost.update(err.seeds)
        except FileNotFoundError:
            raise
        except OSError as err:
            damaged[path] = f"unreadable ({err.strerror or err})"
    return records, damaged


def owners(records: list[Record]) -> dict[int, tuple[Record, int]]:
    """Each seed of ``records`` with the first record that has it and its position there."""
    owner: dict[int, tuple[Record, int]] = {}
    for record in records:
        for position, seed in enumerate(record.seeds):
            owner.setdefault(seed, (record, position))
    return owner


def seal(folder: Path, batch_size: int) -> None:
    """Seal ``folder``'s parts and ``results.parquet`` into one ``results.parquet`` (a row
    group per ``batch_size`` seeds, damaged files left out), then remove the parts."""
    parts = folder / PARTS
    if not parts.is_dir():
        return
    records = stored(folder)[0]
    owner = owners(records)
    seeds = sorted(owner)
    lone = len(records) == 1 and records[0].path.parent == parts
    if lone and records[0].seeds == seeds and len(seeds) <= batch_size:
        os.replace(records[0].path, folder / FILE)  # already what the seal would write
    elif any(record.path.parent == parts for record in records):
        first = records[0]
        stats = {
            name: [owner[s][0].stats[name][owner[s][1]] for s in seeds] for name in first.stats
        }
        chunks = [seeds[i : i + batch_size] for i in range(0, len(seeds), batch_size)]
        readers: dict[Path, _Rows] = {}
        tables = (_gather(chunk, owner, readers) for chunk in chunks)
        record = {"config": first.key, "every": first.every, "seeds": seeds, "stats": stats}
        _write(folder / FILE, tables, record)
    fsync_folder(folder)
    shutil.rmtree(parts)


def _gather(chunk: list[int], owner: dict[int, tuple[Record, int]], readers: dict) -> pa.Table:
    """The rows of the seeds of ``chunk``, in its order, from the files that hold them."""
    spans: list[list[Any]] = []  # [record, first position, stop]: consecutive rows of a file
    for seed in chunk:
        record, position = owner[seed]
        if spans and spans[-1][0] is record and spans[-1][2] == position:
            spans[-1][2] += 1
        else:
            spans.append([record, position, position + 1])
    pieces = []
    for record, first, stop in spans:
        rows = readers.setdefault(record.path, _Rows(record.path))
        pieces.append(rows.take(first * record.rows, stop * record.rows))
    return pa.concat_tables(pieces).combine_chunks()


class _Rows:
    """Rows of a Parquet file by number, read a row group at a time (the last one kept)."""

    def __init__(self, path: Path) -> None:
        import pyarrow.parquet as pq

        self.file = pq.ParquetFile(path)
        meta = self.file.metadata
        sizes = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
        self.starts = np.cumsum([0, *sizes])
        self.kept: dict[int, pa.Table] = {}

    def take(self, first: int, stop: int) -> pa.Table:
        low = int(np.searchsorted(self.starts, first, "right")) - 1
        high = int(np.searchsorted(self.starts, stop, "left"))
        table = pa.concat_tables([self._group(g) for g in range(low, high)])
        return table.slice(first - int(self.starts[low]), stop - first)

    def _group(self, index: int) -> pa.Table:
        if index not in self.kept:  # metadata dropped: the footer's record is not data
            self.kept = {index: self.file.read_row_group(index).replace_schema_metadata(None)}
        return self.kept[index]


def read_columns(record: Record, columns: list[str]) -> dict[str, np.ndarray]:
    """``columns`` of the file of ``record``, checked again as it is read; nulls as NaN."""
    import pyarrow.parquet as pq

    with record.path.open("rb") as handle:
        again = read_record(handle, record.path)
        if again != record:
            raise Changed("changed while it was read; read it again")
        handle.seek(0)
        table = pq.ParquetFile(handle).read(columns=list(columns))
    return {name: table.column(name).to_numpy() for name in columns}


def final_values(folder: Path, seeds: Iterable[int], column: str) -> np.ndarray:
    """The value of ``column`` in the last round kept of each of ``seeds`` in ``folder``."""
    owner = owners(stored(folder)[0])
    values: dict[Path, np.ndarray] = {}
    found = []
    for seed in seeds:
        record, position = owner[seed]
        if record.path not in values:
            values[record.path] = read_columns(record, [column])[column]
        found.append(values[record.path][(position + 1) * record.rows - 1])
    return np.array(found, dtype=np.float64)
