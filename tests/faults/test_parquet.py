"""Parquet results and thinned rounds under faults: a stopped run resumes to the same file, two
writers write each seed once, a damaged file is simulated again in one line and never read,
a folder of another format or run.every is refused in one line, and so is a bad run.every."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from nslb_cli.api import ConfigError
from nslb_cli.runner.compose import check_command_line
from nslb_cli.store import parquet
from tests.helpers.cli import NSLB, QUICK, nslb, nslb_process
from tests.helpers.faults import stop_after, temporaries

RUN = ["run", *QUICK, "run.n_seeds=6", "run.batch_size=2"]
PARQUET = ["run.format=parquet", "run.every=7"]


def run_into(folder: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return nslb(*RUN, *args, f"hydra.run.dir={folder}", cwd=cwd)


def results(folder: Path) -> dict[str, bytes]:
    """The result files of a folder (hidden ones, the parts, left out)."""
    names = ("results.parquet", "config.yaml")
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.name in names}


def one_error_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("nslb: error:"), stderr
    return lines[0]


@pytest.fixture
def reference(tmp_path: Path) -> dict[str, bytes]:
    done = run_into(tmp_path / "ref", *PARQUET, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return results(tmp_path / "ref")


def test_a_run_writes_one_file_of_every_seed(tmp_path: Path, reference) -> None:
    folder = tmp_path / "ref"
    names = sorted(p.name for p in folder.iterdir() if not p.name.startswith("."))
    assert names == ["config.yaml", "nslb.log", "provenance.jsonl", "results.parquet"]
    assert not (folder / parquet.PARTS).exists()
    file = pq.ParquetFile(folder / parquet.FILE)
    assert file.metadata.num_row_groups == 3, "a row group per batch of run.batch_size seeds"
    table = file.read().to_pandas()
    assert sorted(set(table["seed"])) == list(range(6))
    assert table["t"].unique().tolist() == [7, 14, 21, 28, 35, 42, 49, 56, 60]


def test_a_stopped_run_resumes_to_the_same_file(tmp_path: Path) -> None:
    """Stopped early, midway and late."""
    run = [*RUN, *PARQUET, "agent=umts", "agent.num_particles=300"]
    done = nslb(*run, f"hydra.run.dir={tmp_path / 'whole'}", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    for delay in (0.3, 1.2, 2.5):
        folder = tmp_path / f"r{delay}"
        args = [*run, f"hydra.run.dir={folder}"]
        stopped = stop_after(args, delay, signal.SIGTERM, cwd=tmp_path)
        assert stopped.returncode in (0, 143), stopped.stderr
        records, damaged = parquet.stored(folder)  # whatever is there is whole
        assert damaged == {} and not temporaries(folder), delay
        again = nslb(*args, cwd=tmp_path)
        assert again.returncode == 0, again.stderr
        assert results(folder) == results(tmp_path / "whole"), delay
    assert not (folder / parquet.PARTS).exists() and not temporaries(folder)


def test_two_writers_of_one_config_write_each_seed_once(tmp_path: Path, reference) -> None:
    args = [NSLB, *RUN, *PARQUET, f"hydra.run.dir={tmp_path / 'r'}"]
    processes = [subprocess.Popen(args, cwd=tmp_path, stderr=subprocess.PIPE, text=True,
                                  stdout=subprocess.DEVNULL) for _ in range(2)]  # fmt: skip
    for process in processes:
        assert process.wait(timeout=300) == 0, process.stderr
    assert results(tmp_path / "r") == reference


def truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:-100])


def flip(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("damage", [flip, pytest.param(truncate, marks=pytest.mark.slow)])
def test_a_damaged_file_is_simulated_again_in_one_line(
    damage: Callable[[Path], None], tmp_path: Path, reference
) -> None:
    """A byte changed, or (with ``-m slow``) cut short: ``tests/store/test_parquet.py``
    shows that neither is read."""
    folder = tmp_path / "ref"
    damage(folder / parquet.FILE)
    plotted = nslb("plot", str(folder), "--out", "figures", cwd=tmp_path)
    assert plotted.returncode == 2 and "results.parquet: damaged" in plotted.stderr
    assert "every result file below it was skipped" in plotted.stderr.splitlines()[-1]
    again = run_into(folder, *PARQUET, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    said = [line for line in again.stdout.splitlines() if "simulating its seeds again" in line]
    assert len(said) == 1 and "results.parquet is damaged" in said[0], again.stdout
    assert results(folder) == reference


def test_a_finished_file_is_kept_when_a_part_is_damaged(tmp_path: Path, reference) -> None:
    folder = tmp_path / "ref"
    before = pq.read_table(folder / parquet.FILE).to_pandas()
    (folder / parquet.PARTS).mkdir()
    (folder / parquet.PARTS / "seeds=6-7.parquet").write_bytes(b"PAR1 cut short")
    more = run_into(folder, *PARQUET, "run.n_seeds=8", cwd=tmp_path)
    assert more.returncode == 0, more.stderr
    assert "seeds=6-7.parquet is damaged" in more.stdout
    table = pq.read_table(folder / parquet.FILE).to_pandas()
    assert sorted(set(table["seed"])) == list(range(8)) and not (folder / parquet.PARTS).exists()
    kept = table[table["seed"] < 6].reset_index(drop=True)
    assert kept.equals(before)
    finals = table.groupby("seed")["cum_regret"].last().to_numpy()  # the objective's source
    shown = f"over its 8 seeds {finals.mean():.2f} ± {finals.std(ddof=1) / np.sqrt(8):.2f}"
    assert shown in more.stdout


def test_a_killed_sealers_temporaries_go_whatever_process_their_pid_names(
    tmp_path: Path, reference
) -> None:
    folder = tmp_path / "ref"
    (folder / parquet.PARTS).mkdir()
    # the pid of a killed writer, since reused (here by this test's process)
    sealing = folder / f".{parquet.FILE}.{os.getpid()}.0a1b2c.tmp"
    part = folder / parquet.PARTS / f".seeds=6-7.parquet.{os.getpid()}.0a1b2c.tmp"
    for path in (sealing, part):
        path.write_bytes(b"PAR1 cut short")
    # a process of its own: this test's pid is alive, the killed writer's was not
    more = nslb_process(*RUN, *PARQUET, "run.n_seeds=8", f"hydra.run.dir={folder}", cwd=tmp_path)
    assert more.returncode == 0, more.stderr
    assert not temporaries(folder) and not (folder / parquet.PARTS).exists()
    assert sorted(set(pq.read_table(folder / parquet.FILE)["seed"].to_pylist())) == list(range(8))


def test_a_parquet_file_nslb_did_not_write_is_never_replaced(tmp_path: Path) -> None:
    """By a run that writes Parquet, nor by one that writes CSVs."""
    folder = tmp_path / "mine"
    folder.mkdir()
    pq.write_table(pa.table({"x": list(range(100))}), folder / parquet.FILE)
    theirs = (folder / parquet.FILE).read_bytes()
    for layout in (PARQUET, []):
        refused = run_into(folder, *layout, cwd=tmp_path)
        assert refused.returncode == 2
        line = one_error_line(refused.stderr)
        assert "holds files nslb did not write (results.parquet)" in line, layout
        assert (folder / parquet.FILE).read_bytes() == theirs
        assert sorted(p.name for p in folder.iterdir()) == [parquet.FILE]


def test_a_users_hidden_tmp_file_is_never_removed(tmp_path: Path, reference) -> None:
    folder = tmp_path / "ref"
    (folder / ".my-notes.tmp").write_text("notes")
    refused = run_into(folder, *PARQUET, "run.n_seeds=8", cwd=tmp_path)
    assert refused.returncode == 2 and ".my-notes.tmp" in one_error_line(refused.stderr)
    assert (folder / ".my-notes.tmp").read_text() == "notes"


def test_the_seeds_a_damaged_file_loses_beyond_the_run_are_named(tmp_path: Path, reference):
    folder = tmp_path / "ref"
    flip(folder / parquet.FILE)
    fewer = nslb(*RUN[:-2], "run.n_seeds=2", *PARQUET, f"hydra.run.dir={folder}", cwd=tmp_path)
    assert fewer.returncode == 0, fewer.stderr
    lost = [line for line in fewer.stdout.splitlines() if "are lost" in line]
    assert len(lost) == 1 and "seeds 2–5 of the damaged file are lost" in lost[0], fewer.stdout


SLOW = pytest.mark.slow
CHANGED_LAYOUTS = [
    pytest.param(PARQUET, ["run.every=7"], id="parquet then csv"),
    pytest.param([], PARQUET, id="csv then parquet", marks=SLOW),
    pytest.param(PARQUET, ["run.format=parquet"], id="another every in parquet", marks=SLOW),
    pytest.param(["run.every=7"], [], id="another every in csv"),
]
"""Parquet then CSV, CSV then Parquet, and another run.every in either format: one change
of format and one of run.every in the fast suite, the other two with ``-m slow``."""


@pytest.mark.parametrize(("first", "then"), CHANGED_LAYOUTS)
def test_another_format_or_every_is_refused_in_one_line(
    first: list[str], then: list[str], tmp_path: Path
) -> None:
    folder = tmp_path / "r"
    assert run_into(folder, *first, cwd=tmp_path).returncode == 0
    before = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}
    refused = run_into(folder, *then, cwd=tmp_path)
    assert refused.returncode == 2, (first, then)
    line = one_error_line(refused.stderr)
    assert str(folder) in line and "run.overwrite=true" in line and "run.every" in line
    assert {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()} == before
    replaced = run_into(folder, *then, "run.overwrite=true", cwd=tmp_path)
    assert replaced.returncode == 0, replaced.stderr
    assert "removed" not in replaced.stdout, "every seed is in the new results"
    kept = {p.name for p in folder.iterdir()}
    assert ("results.parquet" in kept) == ("run.format=parquet" in then)
    assert any(n.startswith("seed=") for n in kept) == ("run.format=parquet" not in then)


def test_an_every_past_the_horizon_keeps_the_last_round(tmp_path: Path) -> None:
    folder = tmp_path / "r"
    done = run_into(folder, "run.every=1000000", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = (folder / "seed=2.csv").read_text().splitlines()
    assert len(lines) == 2 and lines[1].startswith("60,")
    plotted = nslb("plot", str(folder), "--out", "figures", cwd=tmp_path)
    assert plotted.returncode == 0, plotted.stderr


def test_a_bad_every_or_format_is_refused_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """By the check of the command line, before anything runs."""
    monkeypatch.chdir(tmp_path)
    for value, said in [
        ("run.every=0", "run.every: must be > 0, got 0"),
        ("run.every=-3", "run.every: must be > 0, got -3"),
        ("run.format=feather", "run.format: must be one of csv, parquet; got 'feather'"),
    ]:
        with pytest.raises(ConfigError) as refused:
            check_command_line([*RUN[1:], value, f"hydra.run.dir={tmp_path / 'r'}"], False)
        assert str(refused.value) == said
        assert not (tmp_path / "r").exists()


def test_a_folder_holding_both_forms_of_its_seeds_says_to_move_one_away(tmp_path: Path) -> None:
    folder = tmp_path / "r"
    assert run_into(folder, *PARQUET, cwd=tmp_path).returncode == 0
    assert run_into(tmp_path / "c", "run.every=7", cwd=tmp_path).returncode == 0
    for csv in (tmp_path / "c").glob("seed=*"):  # the same seeds, as CSVs, copied in
        csv.rename(folder / csv.name)
    refused = run_into(folder, *PARQUET, cwd=tmp_path)
    assert refused.returncode == 2
    line = one_error_line(refused.stderr)
    assert "in two forms" in line and "move one form away" in line, line


def test_a_folder_where_nslb_writes_a_file_is_refused_in_one_line(tmp_path: Path) -> None:
    folder = tmp_path / "r"
    (folder / parquet.FILE).mkdir(parents=True)
    refused = run_into(folder, *PARQUET, cwd=tmp_path)
    assert refused.returncode == 2
    assert "(results.parquet/)" in one_error_line(refused.stderr)
    assert sorted(p.name for p in folder.iterdir()) == [parquet.FILE]
