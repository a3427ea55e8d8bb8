"""Signals at random moments: Ctrl-C (SIGINT) and SIGTERM stop every command in one line
(`nslb: interrupted`, 130; `nslb: terminated`, 143), leave only whole files, and running the
same command again gives byte for byte what an undisturbed command gives.

Each kind of command is run once undisturbed (the reference, which also measures how long
it takes), then stopped at moments drawn uniformly over that time (seeded), alternating the
two signals. The default run tries a few moments of a sweep on each launcher; ``-m slow``
tries 20 of every kind.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

from tests.helpers.cli import NSLB, nslb
from tests.helpers.faults import (
    expected_exit,
    one_line_for,
    snapshot,
    stop_after,
    temporaries,
)
from tests.helpers.movielens import tiny_release, write_csv
from tests.helpers.paths import ML_100K

FAST, SLOW = 2, 20  # moments per kind of command
EARLIEST = 0.25  # seconds: before, Python itself may still be starting (no nslb code runs)
SIGNALS = (signal.SIGINT, signal.SIGTERM)

QUICK_RUN = ["env.horizon=500", "run.progress=false"]
KINDS = {
    "run": ["run", "agent=mts", "run.n_seeds=12", "run.batch_size=1", *QUICK_RUN,
            "hydra.run.dir=out"],
    "umts run": ["run", "agent=umts", "agent.num_particles=100", "run.n_seeds=32",
                 "run.batch_size=16", "run.threads=2", *QUICK_RUN,
                 "hydra.run.dir=out"],  # in compiled kernels, two parts of a batch in threads
    "sweep": ["run", "-m", "agent=mts,exp4s,cd_ucb", "run.n_seeds=6", "run.batch_size=2",
              *QUICK_RUN, "hydra.sweep.dir=out"],
    "joblib sweep": ["run", "-m", "agent=mts,exp4s,cd_ucb,random", "run.n_seeds=6",
                     "run.batch_size=2", *QUICK_RUN, "hydra/launcher=joblib",
                     "hydra.launcher.n_jobs=2", "hydra.sweep.dir=out"],
}  # fmt: skip


def moments(kind: str, duration: float, count: int) -> list[tuple[float, int]]:
    """``count`` (delay, signal) pairs over ``[EARLIEST, 1.1 duration]``, seeded by kind."""
    rng = np.random.default_rng(sum(map(ord, kind)))
    delays = rng.uniform(EARLIEST, max(1.1 * duration, EARLIEST + 0.1), count)
    return [(float(d), int(SIGNALS[i % 2])) for i, d in enumerate(delays)]


def reference(folder: Path, args: list[str]) -> tuple[dict[str, bytes], float]:
    folder.mkdir(parents=True)
    start = time.monotonic()
    done = nslb(*args, cwd=folder)
    assert done.returncode == 0, done.stderr
    return snapshot(folder / "out"), time.monotonic() - start


def assert_clean_stop(stopped: object, signum: int) -> None:
    assert stopped.returncode in (0, expected_exit(signum)), stopped.stderr
    if stopped.returncode != 0:
        assert stopped.stderr.strip().splitlines()[-1:] == [one_line_for(signum)], stopped.stderr
    assert "Traceback" not in stopped.stderr, stopped.stderr


def stop_then_rerun(kind: str, count: int, tmp_path: Path) -> None:
    args = KINDS[kind]
    expected, duration = reference(tmp_path / "reference", args)
    for trial, (delay, signum) in enumerate(moments(kind, duration, count)):
        folder = tmp_path / f"trial{trial}"
        folder.mkdir()
        stopped = stop_after(args, delay, signum, cwd=folder)
        assert_clean_stop(stopped, signum)
        partial = snapshot(folder / "out")
        for name, data in partial.items():  # whatever is there is whole: the final bytes
            assert data == expected.get(name), f"{kind}, {delay:.2f} s: {name} is not whole"
        again = nslb(*args, cwd=folder)
        assert again.returncode == 0, again.stderr
        assert snapshot(folder / "out") == expected, f"{kind}: stopped at {delay:.2f} s"
        assert not temporaries(folder / "out")


FAST_KINDS = ["sweep"]
"""A sweep; a run is a sweep's job, and joblib's workers and umTS's threads are tried with
``-m slow``, as every kind is twenty times."""


@pytest.mark.parametrize("kind", FAST_KINDS)
def test_a_stopped_run_resumes_byte_identically(kind: str, tmp_path: Path) -> None:
    stop_then_rerun(kind, FAST, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("kind", list(KINDS))
def test_twenty_stops_of_each_kind_resume_byte_identically(kind: str, tmp_path: Path) -> None:
    stop_then_rerun(kind, SLOW, tmp_path)


def plot_stops(count: int, tmp_path: Path) -> None:
    results = tmp_path / "results"
    results.mkdir()
    made = nslb("run", "-m", "agent=mts,exp4s,random", "run.n_seeds=8", *QUICK_RUN,
                "hydra.sweep.dir=out", cwd=results)  # fmt: skip
    assert made.returncode == 0, made.stderr
    env = {"SOURCE_DATE_EPOCH": "0"}  # PDFs without a creation date: byte-comparable
    args = ["plot", str(results / "out"), "--out", "figures"]
    start = time.monotonic()
    first = stop_after(args, 600, signal.SIGINT, cwd=tmp_path, env=env)
    duration = time.monotonic() - start
    assert first.returncode == 0, first.stderr
    expected = snapshot(tmp_path / "figures", lambda p: True)
    assert any(name.endswith(".png") for name in expected)
    for trial, (delay, signum) in enumerate(moments("plot", duration, count)):
        stopped = stop_after(args, delay, signum, cwd=tmp_path, env=env)
        assert_clean_stop(stopped, signum)
        assert snapshot(tmp_path / "figures", lambda p: True) == expected, (
            f"plot stopped at {delay:.2f} s (trial {trial}): the previous figures changed"
        )
        assert not temporaries(tmp_path / "figures")


def test_a_stopped_plot_leaves_the_previous_figures_whole(tmp_path: Path) -> None:
    plot_stops(FAST, tmp_path)


@pytest.mark.slow
def test_twenty_stopped_plots_leave_the_previous_figures_whole(tmp_path: Path) -> None:
    plot_stops(SLOW, tmp_path)


def prepare_args(tmp_path: Path) -> list[str]:
    """``nslb data prepare`` of ML-100K when it is here (a few seconds), else of a tiny
    release (the same code, a shorter time to hit)."""
    if (ML_100K / "u.data").is_file():
        source = ["env.data_dir=" + str(ML_100K), "env.min_user_ratings=100",
                  "env.min_item_ratings=100"]  # fmt: skip
    else:
        folder = write_csv(tiny_release(), tmp_path / "release")
        source = [f"env.data_dir={folder}", "env.min_user_ratings=20",
                  "env.min_item_ratings=30", "env.rank=3", "env.n_states=3"]  # fmt: skip
    return ["data", "prepare", "--json", *source]


def diagnostics(stdout: str) -> dict:
    """What ``nslb data prepare --json`` reports, without timings and paths."""
    report = json.loads(stdout)
    report.pop("cache")
    report.pop("build_seconds", None)
    return report


def prepare_stops(count: int, tmp_path: Path) -> None:
    args = prepare_args(tmp_path)
    start = time.monotonic()
    first = nslb(*args, f"env.cache_dir={tmp_path / 'reference'}", cwd=tmp_path)
    duration = time.monotonic() - start
    assert first.returncode == 0, first.stderr
    expected = diagnostics(first.stdout)
    for trial, (delay, signum) in enumerate(moments("prepare", duration, count)):
        cache = tmp_path / f"cache{trial}"
        stopped = stop_after([*args, f"env.cache_dir={cache}"], delay, signum, cwd=tmp_path)
        assert_clean_stop(stopped, signum)
        assert not temporaries(cache)
        again = nslb(*args, f"env.cache_dir={cache}", cwd=tmp_path)
        assert again.returncode == 0, again.stderr
        assert diagnostics(again.stdout) == expected, f"prepare stopped at {delay:.2f} s"
        shutil.rmtree(cache, ignore_errors=True)


def test_a_stopped_data_prepare_prepares_the_same_data_again(tmp_path: Path) -> None:
    prepare_stops(FAST, tmp_path)


@pytest.mark.slow
def test_twenty_stopped_data_prepares_prepare_the_same_data_again(tmp_path: Path) -> None:
    prepare_stops(SLOW, tmp_path)


def owned_by(pid: int) -> list[int]:
    """The processes of this machine whose jobs belong to command ``pid`` (the
    ``NSLB_OWNER_PID`` they inherited), the command itself left out."""
    owner = f"NSLB_OWNER_PID={socket.gethostname()}:{pid}".encode()
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            if owner in (entry / "environ").read_bytes().split(b"\0"):
                found.append(int(entry.name))
        except OSError:
            continue
    return [p for p in found if p != pid]


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="reads /proc")
def test_workers_of_a_killed_parallel_sweep_end_themselves(tmp_path: Path) -> None:
    """SIGKILL cannot be caught, so the command cannot stop its workers: they see it gone
    and end within seconds, instead of simulating to the end of their batch and idling
    for minutes; and they write nothing."""
    command = subprocess.Popen(
        [NSLB, "run", "-m", "agent=umts", "agent.num_particles=3000,3001", "run.n_seeds=8",
         "env.horizon=2000", "run.batch_size=4", "hydra/launcher=joblib",
         "hydra.launcher.n_jobs=2", "hydra.sweep.dir=s"], cwd=tmp_path,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        env={k: v for k, v in os.environ.items() if k != "NSLB_OWNER_PID"},
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while len(list(tmp_path.glob("s/**/nslb.log"))) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)  # both workers have begun their job
    assert len(list(tmp_path.glob("s/**/nslb.log"))) == 2, "the sweep's jobs started"
    time.sleep(1.0)  # in the middle of their first batch
    assert len(owned_by(command.pid)) >= 2, "its workers are found by the command's pid"
    command.kill()
    command.wait()
    deadline = time.monotonic() + 10
    while owned_by(command.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert owned_by(command.pid) == []
    assert not list((tmp_path / "s").rglob("seed=*.csv"))
