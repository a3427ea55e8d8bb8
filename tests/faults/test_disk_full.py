"""A full disk (or a quota) gives one line naming where and why, and leaves nothing half
written that looks valid: the next run, with room, completes as an undisturbed one.

The disk fills through a file-size limit (RLIMIT_FSIZE: writes past it fail with EFBIG, as
on a full disk), through writes that share a few bytes and then fail with ENOSPC
(``tests.faults.small_disk``: a full disk without privileges, wherever the tests run), and,
where this machine lets the tests mount one, through a small tmpfs.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers.cli import NSLB, QUICK, nslb
from tests.helpers.faults import file_size_limit, snapshot, temporaries
from tests.helpers.paths import REPO

RUN = ["run", *QUICK, "run.n_seeds=6", "run.batch_size=2"]
BIG = [*RUN, "env.horizon=2000", "run.n_seeds=20"]
"""Twenty seeds of about 250 kB each: more than a disk of ``MIB`` holds."""
MIB = 1 << 20


def limited(args: list[str], cwd: Path, limit: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [NSLB, *args], cwd=cwd, capture_output=True, text=True, timeout=300,
        preexec_fn=file_size_limit(limit),
    )  # fmt: skip


def on_small_disk(args: list[str], cwd: Path, room: int) -> subprocess.CompletedProcess[str]:
    """``nslb args…`` with ``room`` bytes left on its disk (``tests.faults.small_disk``)."""
    path = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "-m", "tests.faults.small_disk", str(room), *args], cwd=cwd,
        env={**os.environ, "PYTHONPATH": path}, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def the_one_line(stderr: str) -> str:
    lines = [line for line in stderr.strip().splitlines() if line.startswith("nslb: error:")]
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    return lines[0]


def kept_whole(folder: Path, reference: Path) -> dict[str, bytes]:
    """The results a command stopped by a full disk left in ``folder``: the batches it
    finished, each file as the undisturbed run in ``reference`` wrote it; nothing half
    written, no overwrite staged."""
    assert not temporaries(folder) and not (folder / ".nslb-overwrite").exists()
    written = snapshot(folder)
    expected = snapshot(reference)
    assert all(written[name] == expected[name] for name in written), "only whole files"
    return written


def test_run_on_a_full_disk_says_where_and_resumes(tmp_path: Path) -> None:
    """The disk full at the first file, and after a few."""
    reference = nslb(*RUN, "env.horizon=300", "hydra.run.dir=ref", cwd=tmp_path)
    assert reference.returncode == 0, reference.stderr
    expected = snapshot(tmp_path / "ref")
    for limit in (600, 9_000):
        folder = f"r{limit}"
        full = limited([*RUN, "env.horizon=300", f"hydra.run.dir={folder}"], tmp_path, limit)
        assert full.returncode == 2, limit
        line = the_one_line(full.stderr)
        assert "cannot write results in" in line and str(tmp_path / folder) in line
        assert "File too large" in line
        kept_whole(tmp_path / folder, tmp_path / "ref")
        again = nslb(*RUN, "env.horizon=300", f"hydra.run.dir={folder}", cwd=tmp_path)
        assert again.returncode == 0, again.stderr
        assert snapshot(tmp_path / folder) == expected, limit


FILLS: dict[str, Callable[[list[str], Path], subprocess.CompletedProcess[str]]] = {
    "File too large": lambda args, cwd: limited(args, cwd, 5_000),
    "No space left on device": lambda args, cwd: on_small_disk(args, cwd, 50_000),
}
"""Two ways the disk fills during an overwrite: by file size, and (with ``-m slow``) for
all files together, which ``test_a_full_disk_keeps_the_finished_batches_and_resumes``
tries on a run."""


@pytest.mark.parametrize(
    "why", ["File too large", pytest.param("No space left on device", marks=pytest.mark.slow)]
)
def test_an_overwrite_on_a_full_disk_gives_its_space_back(why: str, tmp_path: Path) -> None:
    """The staged new results of a failed overwrite are removed at once (they would hold
    the disk full until the folder's next run); the old results stay whole."""
    assert nslb(*RUN, "env.horizon=300", "hydra.run.dir=r", cwd=tmp_path).returncode == 0
    before = snapshot(tmp_path / "r")
    full = FILLS[why]([*RUN, "env.horizon=300", "run.overwrite=true", "hydra.run.dir=r"], tmp_path)
    assert full.returncode == 2, why
    assert f"cannot write results in {tmp_path / 'r'}: {why}" in the_one_line(full.stderr)
    assert not (tmp_path / "r/.nslb-overwrite").exists() and not temporaries(tmp_path / "r")
    assert snapshot(tmp_path / "r") == before, why


def test_plot_on_a_full_disk_says_where(tmp_path: Path) -> None:
    assert nslb(*RUN, "hydra.run.dir=r", cwd=tmp_path).returncode == 0
    full = limited(["plot", "r", "--out", "figures"], tmp_path, 20_000)
    assert full.returncode == 2
    line = the_one_line(full.stderr)
    assert "cannot write" in line and "figures" in line
    assert not temporaries(tmp_path / "figures")


def test_a_sweep_on_a_full_disk_records_each_failed_job(tmp_path: Path) -> None:
    sweep = ["run", "-m", "agent=mts,random", *QUICK, "hydra.sweep.dir=s"]
    full = limited(sweep, tmp_path, 5_000)  # room for Hydra's multirun.yaml, not for a CSV
    assert full.returncode == 1 and "Traceback" not in full.stderr, full.stderr
    assert "2 of 2 sweep jobs failed" in full.stderr
    for agent in ("mts", "random"):  # the job's line and its summary line name its folder
        where = f"cannot write results in {tmp_path / 's/synthetic' / agent}"
        assert full.stderr.count(where) == 2, full.stderr
    assert full.stderr.count("File too large") >= 2
    fuller = limited(sweep, tmp_path / "s", 600)  # not even room for multirun.yaml
    assert fuller.returncode == 2
    assert str(tmp_path / "s" / "s") in the_one_line(fuller.stderr)


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The results of ``BIG``, written undisturbed."""
    cwd = tmp_path_factory.mktemp("big")
    reference = nslb(*BIG, "hydra.run.dir=ref", cwd=cwd)
    assert reference.returncode == 0, reference.stderr
    return cwd / "ref"


@pytest.fixture
def tmpfs(tmp_path: Path):  # type: ignore[no-untyped-def]
    """A 1 MiB tmpfs at ``tmp_path / "disk"``, if this machine lets the tests mount one."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(disk)], capture_output=True
    )
    if mounted.returncode != 0 or os.geteuid() != 0:
        pytest.skip("cannot mount a small tmpfs here")
    yield disk
    subprocess.run(["umount", str(disk)], check=False)


def test_a_full_disk_keeps_the_finished_batches_and_resumes(big: Path, tmp_path: Path) -> None:
    """``test_a_really_full_disk``'s run, on a disk of 1 MiB that needs no privileges:
    the same one line and exit status, the batches that fit kept whole, and the next run,
    with room, completes as an undisturbed one."""
    full = on_small_disk([*BIG, "hydra.run.dir=r"], tmp_path, MIB)
    assert full.returncode == 2
    line = the_one_line(full.stderr)
    assert line.endswith(f"cannot write results in {tmp_path / 'r'}: No space left on device")
    kept = kept_whole(tmp_path / "r", big)
    assert {"seed=0.csv", "seed=1.csv"} <= kept.keys() and "seed=19.csv" not in kept
    again = nslb(*BIG, "hydra.run.dir=r", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert snapshot(tmp_path / "r") == snapshot(big)


def test_a_really_full_disk(tmpfs: Path, big: Path, tmp_path: Path) -> None:
    full = nslb(*BIG, f"hydra.run.dir={tmpfs}/r", cwd=tmp_path)
    assert full.returncode == 2
    line = the_one_line(full.stderr)
    assert line.endswith(f"cannot write results in {tmpfs / 'r'}: No space left on device")
    assert not temporaries(tmpfs)
    kept = kept_whole(tmpfs / "r", big)
    assert {"seed=0.csv", "seed=1.csv"} <= kept.keys() and "seed=19.csv" not in kept
