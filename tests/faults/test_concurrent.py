"""Concurrent writers: one writer per run folder, seeds never written twice or mixed, and two
sweeps into one sweep folder that keep their own failure records."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

from tests.helpers.cli import NSLB, nslb
from tests.helpers.faults import snapshot

# umTS with many particles: long enough (seconds) for the two processes to overlap
SLOW_RUN = ["agent=umts", "env.horizon=1000", "run.n_seeds=8", "run.batch_size=2",
            "run.progress=false"]  # fmt: skip


def start(args: list[str], cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [NSLB, *args], cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )


def finish(process: subprocess.Popen[str]) -> tuple[int, str]:
    _, stderr = process.communicate(timeout=300)
    return process.returncode, stderr


def seed_keys(folder: Path) -> set[str]:
    return {json.loads(p.read_text())["config"] for p in folder.glob("seed=*.json")}


def test_a_second_writer_of_another_config_is_refused_and_nothing_mixes(tmp_path: Path) -> None:
    folder = tmp_path / "r"
    long_run = ["agent=umts", "agent.num_particles=1000", "env.horizon=2000", "run.n_seeds=50",
                "run.batch_size=1", "run.progress=false"]  # fmt: skip
    first = start(["run", *long_run, f"hydra.run.dir={folder}"], tmp_path)
    while not (folder / "seed=0.csv").exists() and first.poll() is None:  # it writes
        time.sleep(0.01)
    second = nslb("run", *SLOW_RUN, "agent.num_particles=300", f"hydra.run.dir={folder}",
                  cwd=tmp_path)  # fmt: skip
    assert first.poll() is None, "the first writer still writes"
    first.send_signal(signal.SIGTERM)
    status, stderr = finish(first)
    assert status == 143, stderr
    assert second.returncode == 2
    lines = second.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("nslb: error:"), second.stderr
    assert str(folder) in lines[0] and f"process {first.pid}" in lines[0]
    assert "num_particles: 1000" in (folder / "config.yaml").read_text()
    assert len(seed_keys(folder)) == 1, "the seeds of one config only"


def test_two_writers_of_one_config_write_each_seed_once(tmp_path: Path) -> None:
    reference = nslb("run", *SLOW_RUN, "hydra.run.dir=ref", cwd=tmp_path)
    assert reference.returncode == 0, reference.stderr
    args = ["run", *SLOW_RUN, "hydra.run.dir=r"]
    first, second = start(args, tmp_path), start(args, tmp_path)
    for process in (first, second):
        status, stderr = finish(process)
        assert status == 0, stderr
    written = [
        seed
        for line in (tmp_path / "r/provenance.jsonl").read_text().splitlines()
        for seed in json.loads(line)["seeds"]
    ]
    assert sorted(written) == list(range(8)), "every seed written exactly once"
    assert snapshot(tmp_path / "r") == snapshot(tmp_path / "ref")


def test_two_sweeps_into_one_folder_keep_their_own_failures(tmp_path: Path) -> None:
    sweep = tmp_path / "s"
    blocked = sweep / "synthetic/random/env.horizon=300"
    blocked.parent.mkdir(parents=True)
    blocked.write_text("a file where a job's folder goes")
    failing = start(["run", "-m", "agent=mts,random,exp4s", "env.horizon=300",
                     "run.fail_fast=true", "run.progress=false", f"hydra.sweep.dir={sweep}"],
                    tmp_path)  # fmt: skip
    other = start(["run", "-m", "agent=cd_ucb,cd_ts,umts", "env.horizon=300",
                   "run.progress=false", f"hydra.sweep.dir={sweep}"], tmp_path)  # fmt: skip
    failed_status, failed_err = finish(failing)
    other_status, other_err = finish(other)
    assert other_status == 0, other_err
    assert "failed" not in other_err
    for agent in ("cd_ucb", "cd_ts", "umts"):
        assert len(list(sweep.glob(f"synthetic/{agent}/*/seed=*.csv"))) == 10, agent
    assert failed_status == 1
    assert "1 of 3 sweep jobs failed" in failed_err and "agent=random" in failed_err
    assert f"{blocked}: a file stands where this job's folder {blocked} goes" in failed_err
    assert blocked.read_text() == "a file where a job's folder goes"
    assert len(list(sweep.glob("synthetic/mts/*/seed=*.csv"))) == 10


def test_a_sweep_goes_on_past_a_job_whose_folder_a_file_blocks(tmp_path: Path) -> None:
    """A file where one of the job's parent folders goes: the job fails naming that file,
    and the other jobs run (a file where the job's own folder goes:
    ``test_two_sweeps_into_one_folder_keep_their_own_failures``)."""
    sweep = tmp_path / "s"
    (sweep / "synthetic").mkdir(parents=True)
    (sweep / "synthetic/mts").write_text("in the way")
    done = nslb("run", "-m", "agent=mts,random", "env.horizon=300", "run.progress=false",
                f"hydra.sweep.dir={sweep}", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 1
    assert "1 of 2 sweep jobs failed" in done.stderr and "Traceback" not in done.stderr
    assert f"{sweep / 'synthetic/mts'}: a file stands where this job's folder" in done.stderr
    assert len(list(sweep.glob("synthetic/random/*/seed=*.csv"))) == 10


def test_a_second_study_into_a_folder_being_tuned_is_refused_and_its_trials_kept(
    tmp_path: Path,
) -> None:
    """Two Optuna studies into one folder would overwrite each other's trial records."""
    from nslb_cli.store.lock import folder_lock

    folder = tmp_path / "outputs/tune/cd_ucb"
    records = folder / ".nslb-study"
    records.mkdir(parents=True)
    (records / "0.json").write_text('{"trial": 0, "objective": 1.0}\n')
    with folder_lock(folder, "study of another command", "nslb run hparams_search=cd_ucb …"):
        second = nslb("run", "hparams_search=cd_ucb", "env.horizon=60", "run.n_seeds=2",
                      "hydra.sweeper.n_trials=2", cwd=tmp_path)  # fmt: skip
    assert second.returncode == 2
    lines = second.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("nslb: error:"), second.stderr
    assert "outputs/tune/cd_ucb is being written by process" in lines[0]
    assert [p.name for p in records.iterdir()] == ["0.json"], "the first study's trials kept"
    assert not list(folder.rglob("seed=*.csv"))
