"""`nslb` end to end through the installed console script, in temporary folders."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from tests.helpers.cli import NSLB, QUICK, nslb


def test_run_writes_one_complete_csv_per_seed(tmp_path: Path) -> None:
    done = nslb("run", *QUICK, "run.n_seeds=3", "run.seed=5", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    folder = tmp_path / "outputs/default/synthetic/mts/env.horizon=60"
    assert sorted(p.name for p in folder.glob("seed=*.csv")) == [
        "seed=5.csv",
        "seed=6.csv",
        "seed=7.csv",
    ]
    frame = pd.read_csv(folder / "seed=6.csv")
    assert len(frame) == 60
    assert list(frame.columns[:3]) == ["t", "action", "reward"]
    config = yaml.safe_load((folder / "config.yaml").read_text())
    assert config["env"]["horizon"] == 60 and config["agent"]["name"] == "mts"


def test_rerun_skips_finished_seeds_and_extends(tmp_path: Path) -> None:
    out = f"hydra.run.dir={tmp_path / 'r'}"
    assert nslb("run", *QUICK, "run.n_seeds=2", out, cwd=tmp_path).returncode == 0
    first = (tmp_path / "r/seed=0.csv").stat().st_mtime_ns
    again = nslb("run", *QUICK, "run.n_seeds=2", out, cwd=tmp_path)
    assert again.returncode == 0 and "already" in again.stderr + again.stdout
    assert (tmp_path / "r/seed=0.csv").stat().st_mtime_ns == first
    more = nslb("run", *QUICK, "run.n_seeds=4", out, cwd=tmp_path)
    assert more.returncode == 0
    assert len(list((tmp_path / "r").glob("seed=*.csv"))) == 4
    assert (tmp_path / "r/seed=0.csv").stat().st_mtime_ns == first


def test_interrupted_write_is_not_taken_for_a_result(tmp_path: Path) -> None:
    folder = tmp_path / "r"
    folder.mkdir()
    (folder / ".seed=0.csv.999999999.abc.tmp").write_text("t,action\n1,")  # a kill leaves it
    done = nslb("run", *QUICK, "run.n_seeds=1", f"hydra.run.dir={folder}", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert len(pd.read_csv(folder / "seed=0.csv")) == 60


def test_a_folder_of_another_config_is_never_overwritten(tmp_path: Path) -> None:
    out = f"hydra.run.dir={tmp_path / 'r'}"
    assert nslb("run", *QUICK, "run.n_seeds=1", out, cwd=tmp_path).returncode == 0
    before = (tmp_path / "r/seed=0.csv").read_bytes()
    clash = nslb("run", "env.horizon=70", "run.n_seeds=2", out, cwd=tmp_path)
    assert clash.returncode == 2
    assert "env.horizon" in clash.stderr and "different config" in clash.stderr
    assert (tmp_path / "r/seed=0.csv").read_bytes() == before
    assert not (tmp_path / "r/seed=1.csv").exists()
    assert yaml.safe_load((tmp_path / "r/config.yaml").read_text())["env"]["horizon"] == 60
    assert not (tmp_path / "r/.hydra").exists(), "no Hydra files that could disagree"


def test_invalid_input_fails_in_one_line_before_anything_runs(tmp_path: Path) -> None:
    bad = nslb("run", "-m", "agent=umts", "agent.num_particles=10,-5", *QUICK, cwd=tmp_path)
    assert bad.returncode == 2
    assert bad.stderr.strip().count("\n") == 0
    assert bad.stderr.startswith("nslb: error: agent.num_particles: must be > 0")
    assert not (tmp_path / "outputs").exists(), "no job started"


def test_usage_errors_exit_with_status_2(tmp_path: Path) -> None:
    """A command nslb lacks, an option that is not there, a key no section has."""
    for args in (["fly"], ["run", "agent=nobody"], ["run", "+agent.typo=1"]):
        result = nslb(*args, cwd=tmp_path)
        assert result.returncode == 2, args
        assert result.stderr.startswith("nslb: error: "), result.stderr
        assert result.stderr.strip().count("\n") == 0, result.stderr


def test_sweep_matches_single_runs_byte_for_byte(tmp_path: Path) -> None:
    """Seed 2 of a 4-seed sweep job equals seed 2 run alone (batch and launcher invariance)."""
    sweep = nslb(
        "run", "-m", "agent=umts", "agent.num_particles=20,30", *QUICK, "run.n_seeds=4",
        f"hydra.sweep.dir={tmp_path / 's'}", cwd=tmp_path,
    )  # fmt: skip
    assert sweep.returncode == 0, sweep.stderr
    alone = nslb(
        "run", "agent=umts", "agent.num_particles=20", *QUICK, "run.seed=2", "run.n_seeds=1",
        f"hydra.run.dir={tmp_path / 'a'}", cwd=tmp_path,
    )  # fmt: skip
    assert alone.returncode == 0, alone.stderr
    swept = tmp_path / "s/synthetic/umts/agent.num_particles=20,env.horizon=60/seed=2.csv"
    assert swept.read_bytes() == (tmp_path / "a/seed=2.csv").read_bytes()
    assert (tmp_path / "s/synthetic/umts/agent.num_particles=30,env.horizon=60").is_dir()


def test_a_default_that_plays_as_random_or_never_commits_is_said_in_the_jobs_line(
    tmp_path: Path,
) -> None:
    """On a 300-round switching latent problem Exp4.S's tuned gamma is 1 (p(a) = gamma / K:
    uniform play) and SL-EC's exploration rule covers the whole run."""
    for agent, note in (("exp4s", "plays uniformly at random"), ("sl_ec", "never commits")):
        done = nslb(
            "run", "env=switching_latent", "env.horizon=300", f"agent={agent}", "run.n_seeds=2",
            "run.progress=false", cwd=tmp_path,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        (line,) = [line for line in done.stdout.splitlines() if "seeds added" in line]
        assert note in line
    gammas = {yaml.safe_load(p.read_text())["gamma"] for p in tmp_path.rglob("exp4s/*/seed=*.json")}
    assert gammas == {1.0}


def test_list_and_help(tmp_path: Path) -> None:
    listed = nslb("list", cwd=tmp_path)
    assert listed.returncode == 0 and "umts" in listed.stdout and "synthetic" in listed.stdout
    assert "usage: nslb" in nslb("--help", cwd=tmp_path).stdout
    assert "num_particles: 100" in nslb("run", "--cfg", "job", "agent=umts", cwd=tmp_path).stdout


@pytest.mark.slow
def test_interrupted_run_keeps_finished_seeds_and_resumes(tmp_path: Path) -> None:
    """(In CI: ``tests/faults/test_signals.py`` stops runs at random moments.)"""
    folder = tmp_path / "r"
    # 20 seeds of 2,000 rounds, one a batch: seconds of work left when the first CSV lands
    args = [NSLB, "run", "agent=umts", "env.horizon=2000", "run.n_seeds=20", "run.batch_size=1",
            "run.progress=false", f"hydra.run.dir={folder}"]  # fmt: skip
    process = subprocess.Popen(args, cwd=tmp_path, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not list(folder.glob("seed=*.csv")) and time.monotonic() < deadline:
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130
    assert stderr.strip().splitlines() == ["nslb: interrupted"], stderr
    finished = {p.name: p.stat().st_mtime_ns for p in folder.glob("seed=*.csv")}
    assert 1 <= len(finished) < 20
    assert not list(folder.glob(".*.tmp")), "no half-written file left behind"
    for name in finished:
        assert len(pd.read_csv(folder / name)) == 2000
    resumed = nslb(*args[1:], cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert len(list(folder.glob("seed=*.csv"))) == 20
    for name, mtime in finished.items():
        assert (folder / name).stat().st_mtime_ns == mtime


def test_multirun_flag_after_an_override_sweeps(tmp_path: Path) -> None:
    """``-m`` after an override is a sweep, as it is before one (Hydra's own parser took the
    overrides after it for unknown arguments and printed its usage)."""
    done = nslb("run", "run.n_seeds=2", "-m", "agent=mts,random", *QUICK, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "usage" not in done.stderr
    seeds = tmp_path.glob("outputs/default/synthetic/*/env.horizon=60/seed=1.csv")
    jobs = sorted(path.parent.parent.name for path in seeds)
    assert jobs == ["mts", "random"]


def test_an_output_folder_in_a_loop_of_links_is_one_line(tmp_path: Path) -> None:
    """``outputs`` a link to itself: one line naming the folder and the reason (it was an
    ELOOP traceback)."""
    (tmp_path / "outputs").symlink_to("outputs")
    done = nslb("run", *QUICK, "run.n_seeds=1", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith("nslb: error: ") and "symbolic links" in done.stderr
