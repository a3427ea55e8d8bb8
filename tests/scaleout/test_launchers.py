"""Scale-out: real sweeps through Hydra's cluster launchers, on this machine.

``submitit_local`` runs each job as its own process the way SLURM would (``[slurm]`` extra);
``ray`` starts a local Ray cluster (``[ray]`` extra). Each sweep is compared with the same
sweep under the basic launcher: the same job folders, byte-identical results (randomness
follows the seed, not the process), the same one-line report of a failed job with the other
jobs' results kept, and nslb's own checks (bad values, the folder lock) working as before.

Slow (``make test-full``); a launcher whose plugin is not installed is skipped:
``pip install -e '.[slurm,ray]'`` first.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from nslb_cli.store.lock import folder_lock
from tests.helpers.cli import NSLB

pytestmark = pytest.mark.slow

SWEEP = ["agent=mts,cd_ucb", "env.horizon=200", "run.progress=false"]
JOB_FOLDERS = {"synthetic/mts/env.horizon=200", "synthetic/cd_ucb/env.horizon=200"}
LOCKED = "synthetic/cd_ucb/env.horizon=200"
"""The job folder another writer holds in the lock tests."""
RESULT_FILES = ("seed=*.csv", "seed=*.json", "config.yaml")

# A local Ray cluster on loopback only (Ray otherwise binds its services to the machine's
# network address), without the dashboard or an access token written to the home folder.
RAY_ENV = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_AUTH_MODE": "disabled"}
RAY_ARGS = [
    "hydra/launcher=ray",
    "+hydra.launcher.ray.init.num_cpus=2",
    "+hydra.launcher.ray.init.include_dashboard=false",
]


@dataclass(frozen=True)
class Launcher:
    plugin: str
    args: list[str]
    env: dict[str, str]


LAUNCHERS = {
    "submitit_local": Launcher(
        "hydra_plugins.hydra_submitit_launcher", ["hydra/launcher=submitit_local"], {}
    ),
    "ray": Launcher("hydra_plugins.hydra_ray_launcher", RAY_ARGS, RAY_ENV),
}
BASIC = Launcher("hydra", [], {})


def sweep(
    launcher: Launcher, folder: Path, *args: str, cwd: Path
) -> subprocess.CompletedProcess[str]:
    """``nslb run -m`` of ``SWEEP`` (and ``args``) into ``folder`` under ``launcher``."""
    command = [NSLB, "run", "-m", *launcher.args, *SWEEP, *args, f"hydra.sweep.dir={folder}"]
    return subprocess.run(
        command,
        cwd=cwd,
        env={**os.environ, **launcher.env},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def results(folder: Path) -> dict[str, bytes]:
    """Every result file below a sweep folder (seeds, configs), by path, with its bytes."""
    return {
        str(path.relative_to(folder)): path.read_bytes()
        for pattern in RESULT_FILES
        for path in folder.glob(f"synthetic/*/*/{pattern}")
    }


def job_folders(folder: Path) -> set[str]:
    return {str(p.parent.relative_to(folder)) for p in folder.glob("synthetic/*/*/config.yaml")}


def failure_report(stderr: str, folder: Path) -> list[str]:
    """The sweep's closing report (its summary line and one line per failed job), with the
    sweep folder written as ``<sweep>``."""
    lines = stderr.replace(str(folder), "<sweep>").splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("nslb: 1 of 2 sweep jobs")]
    assert starts, stderr
    return lines[starts[0] : starts[0] + 2]


@dataclass(frozen=True)
class Reference:
    """What the basic launcher gives for the sweeps of these tests."""

    results: dict[str, bytes]
    locked_status: int
    locked_report: list[str]
    locked_results: dict[str, bytes]


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Reference:
    """The same sweeps under the basic launcher: a clean one of 4 seeds, and one of 2 seeds
    while another writer holds ``LOCKED``."""
    root = tmp_path_factory.mktemp("basic")
    clean = sweep(BASIC, root / "clean", "run.n_seeds=4", cwd=root)
    assert clean.returncode == 0, clean.stderr
    with held(root / "locked" / LOCKED):
        locked = sweep(BASIC, root / "locked", "run.n_seeds=2", cwd=root)
    return Reference(
        results(root / "clean"),
        locked.returncode,
        failure_report(locked.stderr, root / "locked"),
        results(root / "locked"),
    )


@contextmanager
def held(folder: Path) -> Iterator[None]:
    """``folder`` locked by this process, as by an nslb command writing another config."""
    with folder_lock(folder, key="another config", command="nslb run (another config)"):
        yield


@pytest.fixture(scope="module", params=sorted(LAUNCHERS))
def launcher(request: pytest.FixtureRequest) -> Launcher:
    """Each launcher in turn (module scope, so a missing plugin skips before the reference
    sweeps run)."""
    chosen = LAUNCHERS[request.param]
    if importlib.util.find_spec(chosen.plugin) is None:
        pytest.skip(f"{request.param}: its Hydra plugin is not installed")
    return chosen


def test_a_sweep_writes_what_the_basic_launcher_writes(
    launcher: Launcher, reference: Reference, tmp_path: Path
) -> None:
    folder = tmp_path / "s"
    first = sweep(launcher, folder, "run.n_seeds=3", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert job_folders(folder) == JOB_FOLDERS
    expected = reference.results
    csvs = {path: data for path, data in results(folder).items() if path.endswith(".csv")}
    assert len(csvs) == 3 * len(JOB_FOLDERS)
    assert csvs == {path: expected[path] for path in csvs}, "byte-identical to the basic sweep"

    written = {p: p.stat().st_mtime_ns for p in folder.glob("synthetic/*/*/seed=*.csv")}
    more = sweep(launcher, folder, "run.n_seeds=4", cwd=tmp_path)
    assert more.returncode == 0, more.stderr
    assert all(p.stat().st_mtime_ns == mtime for p, mtime in written.items()), "kept, not redone"
    assert results(folder) == expected


def test_a_failed_job_is_reported_as_with_the_basic_launcher(
    launcher: Launcher, reference: Reference, tmp_path: Path
) -> None:
    folder = tmp_path / "s"
    with held(folder / LOCKED):
        done = sweep(launcher, folder, "run.n_seeds=2", cwd=tmp_path)
    assert done.returncode == reference.locked_status == 1, done.stderr
    report = failure_report(done.stderr, folder)
    assert report == reference.locked_report
    assert "agent=cd_ucb" in report[1] and f"process {os.getpid()}" in report[1]
    assert "Traceback" not in done.stderr
    kept = results(folder)
    assert len(kept) == 2 * 2 + 1, "the other job's seeds (csv, json) and its config"
    assert kept == reference.locked_results
    assert not list((folder / LOCKED).glob("seed=*")), "nothing written past the lock"


def test_bad_values_are_refused_before_any_job_starts(launcher: Launcher, tmp_path: Path) -> None:
    folder = tmp_path / "s"
    done = sweep(launcher, folder, "run.n_seeds=2,0", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.startswith("nslb: error: run.n_seeds"), done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert not folder.exists(), "no job was launched"
