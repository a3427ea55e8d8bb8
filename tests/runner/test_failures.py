"""A failed or interrupted run never blocks, changes or litters the next one (issue 9)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import warnings
from pathlib import Path

import pytest
import yaml

from nslb_cli.plot.notebook import load_results
from nslb_cli.runner import failures
from nslb_cli.runner.owner import OWNER
from tests.helpers.cli import NSLB, QUICK, nslb, nslb_process
from tests.helpers.movielens import tiny_env_params


def movielens_args(tmp_path: Path) -> list[str]:
    p = tiny_env_params(tmp_path / "data", horizon=50)
    keys = (
        "data_dir",
        "cache_dir",
        "min_user_ratings",
        "min_item_ratings",
        "rank",
        "als_reg",
        "n_states",
        "n_arms",
    )
    return ["env=movielens", "env.horizon=50", *(f"env.{k}={getattr(p, k)}" for k in keys)]


def test_a_sweep_finishes_the_other_jobs_and_reports_the_failed_one(tmp_path: Path) -> None:
    # 10,000 ratings per user keeps nobody: that job fails when it prepares its data.
    args = [a for a in movielens_args(tmp_path) if not a.startswith("env.min_user_ratings")]
    args += ["run.n_seeds=2", "run.progress=false"]
    sweep = f"hydra.sweep.dir={tmp_path / 's'}"
    done = nslb("run", "-m", *args, "env.min_user_ratings=20,10000", sweep, cwd=tmp_path)
    assert done.returncode == 1
    summary = done.stderr[done.stderr.index("nslb: 1 of 2 sweep jobs failed:") :].splitlines()
    assert len(summary) == 2 and "env.min_user_ratings=10000" in summary[1]
    assert "Traceback" not in done.stderr
    good = tmp_path / "s/movielens/mts"
    assert len(list(good.glob("*min_user_ratings=20*/seed=*.csv"))) == 2
    assert not list(good.glob("*min_user_ratings=10000*/config.yaml")), "no claim, no result"


def test_fail_fast_skips_the_jobs_after_the_first_failure(tmp_path: Path) -> None:
    args = [a for a in movielens_args(tmp_path) if not a.startswith("env.min_user_ratings")]
    args += ["run.n_seeds=1", "run.fail_fast=true"]
    sweep = f"hydra.sweep.dir={tmp_path / 's'}"
    done = nslb("run", "-m", *args, "env.min_user_ratings=10000,20", sweep, cwd=tmp_path)
    assert done.returncode == 1
    assert "fail_fast" in done.stderr
    assert not list((tmp_path / "s").rglob("seed=*.csv"))


def test_a_run_that_failed_before_its_first_result_does_not_block_the_corrected_one(
    tmp_path: Path,
) -> None:
    (tmp_path / "empty").mkdir()
    out = f"hydra.run.dir={tmp_path / 'r'}"
    args = movielens_args(tmp_path)
    wrong = [a if not a.startswith("env.data_dir=") else f"env.data_dir={tmp_path / 'empty'}"
             for a in args]  # fmt: skip
    failed = nslb("run", *wrong, "run.n_seeds=1", out, cwd=tmp_path)
    assert failed.returncode == 2 and failed.stderr.count("\n") == 1, failed.stderr
    assert not (tmp_path / "r/config.yaml").exists()
    corrected = nslb("run", *args, "run.n_seeds=1", out, cwd=tmp_path)
    assert corrected.returncode == 0, corrected.stderr
    assert (tmp_path / "r/seed=0.csv").is_file()


def test_every_other_writers_temporaries_are_removed_under_the_folders_lock(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "r"
    folder.mkdir()
    dead = subprocess.run(["true"], check=True)  # a process id that is gone …
    stale = folder / ".seed=0.json.999999999.abc123.tmp"  # … and one that never was
    stale.write_text("{")
    # a pid that names a live process (here this test's), as a reused pid or a pid of another
    # host sharing the folder would: its process does not hold the folder's lock, so the
    # file is no write in progress
    reused = folder / f".seed=1.csv.{os.getpid()}.abc123.tmp"
    reused.write_text("t,")
    plotting = folder / f".regret.png.{os.getpid()}.abc123.tmp"  # a plot writes without it
    plotting.write_bytes(b"")
    assert dead.returncode == 0
    done = nslb_process("run", *QUICK, "run.n_seeds=2", f"hydra.run.dir={folder}", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert not stale.exists() and not reused.exists()
    assert plotting.exists(), "a live plot's file in the making is left to it"
    assert sorted(p.name for p in folder.glob("seed=*.csv")) == ["seed=0.csv", "seed=1.csv"]


def test_overwrite_replaces_results_and_nothing_else_does(tmp_path: Path) -> None:
    out = f"hydra.run.dir={tmp_path / 'r'}"
    assert nslb("run", *QUICK, "run.n_seeds=2", out, cwd=tmp_path).returncode == 0
    csv = tmp_path / "r/seed=0.csv"
    original = csv.read_bytes()
    refused = nslb("run", "env.horizon=70", "run.n_seeds=2", out, cwd=tmp_path)
    assert refused.returncode == 2 and "run.overwrite=true" in refused.stderr
    assert csv.read_bytes() == original
    replaced = nslb("run", "env.horizon=70", "run.n_seeds=1", "run.overwrite=true", out,
                    cwd=tmp_path)  # fmt: skip
    assert replaced.returncode == 0, replaced.stderr
    assert len(csv.read_text().splitlines()) == 71
    assert not (tmp_path / "r/seed=1.csv").exists(), "the old seeds went with their config"
    assert yaml.safe_load((tmp_path / "r/config.yaml").read_text())["env"]["horizon"] == 70


def test_each_run_folder_records_its_provenance(tmp_path: Path) -> None:
    out = f"hydra.run.dir={tmp_path / 'r'}"
    assert nslb("run", *QUICK, "run.n_seeds=2", out, cwd=tmp_path).returncode == 0
    lines = (tmp_path / "r/provenance.jsonl").read_text().splitlines()
    entry = json.loads(lines[0])
    assert entry["command"].startswith("nslb run env.horizon=60")
    assert entry["seeds"] == [0, 1]
    assert {"nslb", "git", "python", "numpy", "hydra", "time"} <= entry.keys()


def _sweep(tmp_path: Path, folder: str) -> list[str]:
    return [NSLB, "run", "-m", "agent=mts,umts", "env.horizon=300", "run.n_seeds=6",
            "run.batch_size=1", "run.progress=false",
            f"hydra.sweep.dir={tmp_path / folder}"]  # fmt: skip


def _kill_when(process: subprocess.Popen, folder: Path, pattern: str, count: int) -> None:
    deadline = time.monotonic() + 120
    while len(list(folder.rglob(pattern))) < count and time.monotonic() < deadline:
        time.sleep(0.01)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=60)


def test_kill_9_at_two_points_then_rerun_equals_an_uninterrupted_sweep(tmp_path: Path) -> None:
    whole = subprocess.run(_sweep(tmp_path, "whole"), cwd=tmp_path, capture_output=True, text=True)
    assert whole.returncode == 0, whole.stderr
    target = tmp_path / "killed"
    first = subprocess.Popen(_sweep(tmp_path, "killed"), cwd=tmp_path, stderr=subprocess.DEVNULL)
    _kill_when(first, target, "seed=*.csv", 2)  # inside the first job
    second = subprocess.Popen(_sweep(tmp_path, "killed"), cwd=tmp_path, stderr=subprocess.DEVNULL)
    _kill_when(second, target / "synthetic/umts", "seed=*.csv", 1)  # inside the second job
    rerun = subprocess.run(_sweep(tmp_path, "killed"), cwd=tmp_path, capture_output=True, text=True)
    assert rerun.returncode == 0, rerun.stderr
    expected = {p.relative_to(tmp_path / "whole"): p.read_bytes()
                for p in (tmp_path / "whole").rglob("seed=*.*")}  # fmt: skip
    got = {p.relative_to(target): p.read_bytes() for p in target.rglob("seed=*.*")}
    assert got.keys() == expected.keys() and len(got) == 24
    assert got == expected
    assert not list(target.rglob("*.tmp")), "no leftovers"


def test_plot_warns_when_runs_come_from_different_nslb_versions(tmp_path: Path) -> None:
    sweep = nslb("run", "-m", "agent=mts,random", *QUICK, "run.n_seeds=2", cwd=tmp_path)
    assert sweep.returncode == 0, sweep.stderr
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # one nslb version: no warning
        load_results(tmp_path / "outputs")
    log = next((tmp_path / "outputs").rglob("random/**/provenance.jsonl"))
    entry = json.loads(log.read_text())
    log.write_text(json.dumps({**entry, "nslb": "0.0.1"}) + "\n")
    mixed = nslb("plot", "outputs", "--format", "png", cwd=tmp_path)
    assert mixed.returncode == 0
    warning = [line for line in mixed.stderr.splitlines() if "different nslb versions" in line]
    assert len(warning) == 1 and "0.0.1" in warning[0]
    with pytest.warns(UserWarning, match="different nslb versions.*0.0.1"):
        load_results(tmp_path / "outputs")


def test_plot_skips_a_csv_cut_inside_its_last_field(tmp_path: Path) -> None:
    assert nslb("run", *QUICK, "run.n_seeds=3", cwd=tmp_path).returncode == 0
    csv = next((tmp_path / "outputs").rglob("seed=1.csv"))
    text = csv.read_text()
    assert text.endswith("\n")
    csv.write_text(text[:-3] + "\n")  # '…,0.2071…\n' -> '…,0.20…\n': still parses
    done = nslb("plot", "outputs", "--format", "png", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    notices = [line for line in done.stderr.splitlines() if "seed=1.csv" in line]
    assert len(notices) == 1 and "damaged" in notices[0]
    summary = (tmp_path / "outputs/summary.md").read_text()
    assert "| mTS | 2 |" in summary, "two seeds left"


def test_a_failure_whose_record_cannot_be_written_is_still_in_the_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The disk that failed a job may not take its failure record either: the summary of
    the command (same process, the basic launcher) still names the job and its error,
    and a fail-fast stop still stops the later jobs. A worker's memory would die with it:
    there, the job fails for the launcher to report."""
    monkeypatch.setenv(failures.SWEEP, "host-1-2")
    (tmp_path / failures.FOLDER).write_text("a file where the records folder goes")
    monkeypatch.setenv(OWNER, f"{socket.gethostname()}:{os.getpid() + 1}")  # in a worker
    with pytest.raises(OSError):
        failures.Failures(tmp_path).record(3, ["agent=mts"], "no space", False)
    monkeypatch.setenv(OWNER, f"{socket.gethostname()}:{os.getpid()}")  # the command
    sweep = failures.Failures(tmp_path)
    sweep.record(3, ["agent=mts"], "cannot write results in /x: No space left on device", True)
    sweep.record(1, ["agent=umts"], "agent.tau: must be > 0", False)
    assert failures.Failures(tmp_path).collect() == [
        failures.Failure(["agent=umts"], "agent.tau: must be > 0"),
        failures.Failure(["agent=mts"], "cannot write results in /x: No space left on device"),
    ]
    assert failures.Failures(tmp_path).stopped()
    assert "2 of 4 sweep jobs failed" in failures.Failures(tmp_path).summary(4)
