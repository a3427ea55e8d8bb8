"""Run folders under faults: nslb never replaces a file it did not write, every seed knows
its config, damaged records heal, every sweep point gets its own folder, and an overwrite
is all or nothing."""

from __future__ import annotations

import json
import re
import signal
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from nslb_cli.store.folder import OutputConflict, read_config, refuse_foreign_files
from tests.helpers.cli import QUICK, nslb
from tests.helpers.faults import snapshot, stop_after, temporaries
from tests.helpers.movielens import tiny_release, write_csv

RUN = ["run", *QUICK, "run.n_seeds=3"]


def run_into(folder: Path, *args: str, cwd: Path) -> object:
    return nslb(*RUN, *args, f"hydra.run.dir={folder}", cwd=cwd)


def one_error_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("nslb: error:"), stderr
    return lines[0]


def test_an_empty_run_dir_is_refused_and_the_current_folder_untouched(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text("mine: true\n")
    done = nslb(*RUN, "hydra.run.dir=", cwd=tmp_path)
    assert done.returncode == 2 and "hydra.run.dir" in one_error_line(done.stderr)
    assert (tmp_path / "config.yaml").read_text() == "mine: true\n"
    assert not list(tmp_path.glob("seed=*"))


FOREIGN = ("notes.txt", "config.yaml", "seed=0.csv.bak")
"""Any file, one named as nslb names its own, or like a seed's."""


def test_files_nslb_did_not_write_are_told_from_its_own(tmp_path: Path) -> None:
    for foreign in FOREIGN:
        folder = tmp_path / foreign
        folder.mkdir()
        (folder / foreign).write_text("the user's own\n")
        with pytest.raises(OutputConflict, match=rf"did not write \({re.escape(foreign)}\)"):
            refuse_foreign_files(folder)


def test_a_folder_with_files_nslb_did_not_write_is_refused(tmp_path: Path) -> None:
    """One line naming the file, which stays as it was; no seed is written."""
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "config.yaml").write_text("the user's own\n")
    done = run_into(folder, cwd=tmp_path)
    line = one_error_line(done.stderr)
    assert done.returncode == 2 and "config.yaml" in line and "did not write" in line
    assert (folder / "config.yaml").read_text() == "the user's own\n"
    assert not list(folder.glob("seed=*.csv"))


def test_results_and_plots_are_nslbs_own_files(tmp_path: Path) -> None:
    folder = tmp_path / "r"
    assert run_into(folder, cwd=tmp_path).returncode == 0
    plotted = nslb("plot", str(folder), cwd=tmp_path)
    assert plotted.returncode == 0, plotted.stderr
    assert list(folder.glob("*.png"))
    again = run_into(folder, "run.n_seeds=4", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert len(list(folder.glob("seed=*.csv"))) == 4


def test_seeds_without_their_config_are_never_adopted(tmp_path: Path) -> None:
    folder = tmp_path / "r"
    assert run_into(folder, "agent=mts", cwd=tmp_path).returncode == 0
    before = snapshot(folder)
    (folder / "config.yaml").unlink()
    other = run_into(folder, "agent=random", cwd=tmp_path)
    assert other.returncode == 2 and str(folder) in one_error_line(other.stderr)
    assert {k: v for k, v in snapshot(folder).items() if k != "config.yaml"} == {
        k: v for k, v in before.items() if k != "config.yaml"
    }
    same = run_into(folder, "agent=mts", cwd=tmp_path)  # its own seeds: adopted, not redone
    assert same.returncode == 0, same.stderr
    assert snapshot(folder) == before, "config.yaml restored, seeds untouched"


DAMAGED_CONFIGS = (b"- a\n- yaml list\n", b"\xff\xfe not utf-8 \x00", b"env: {name: synth")
"""A YAML list, bytes that are not UTF-8, a file cut short."""


def test_a_damaged_config_yaml_is_read_as_none(tmp_path: Path) -> None:
    for damage in DAMAGED_CONFIGS:
        (tmp_path / "config.yaml").write_bytes(damage)
        assert read_config(tmp_path) is None, damage


def test_a_damaged_config_yaml_heals_from_its_seeds(tmp_path: Path) -> None:
    """A file cut short is restored from the seeds' records, which are left as they were."""
    folder = tmp_path / "r"
    assert run_into(folder, cwd=tmp_path).returncode == 0
    before = snapshot(folder)
    (folder / "config.yaml").write_bytes(DAMAGED_CONFIGS[-1])
    again = run_into(folder, cwd=tmp_path)
    assert again.returncode == 0 and "Traceback" not in again.stderr, again.stderr
    assert snapshot(folder) == before


def test_an_overwrite_with_fewer_seeds_says_which_old_ones_it_removed(tmp_path: Path) -> None:
    folder = tmp_path / "r"
    assert run_into(folder, "run.n_seeds=5", cwd=tmp_path).returncode == 0
    fewer = run_into(folder, "run.n_seeds=2", "run.overwrite=true", cwd=tmp_path)
    assert fewer.returncode == 0, fewer.stderr
    assert sorted(p.name for p in folder.glob("seed=*.csv")) == ["seed=0.csv", "seed=1.csv"]
    removed = [line for line in fewer.stdout.splitlines() if "run.overwrite removed" in line]
    assert len(removed) == 1 and "3 old seeds" in removed[0] and "(2–4)" in removed[0]
    assert ".nslb-overwrite" not in fewer.stdout, "the lines name the run folder"


def flip_a_bit(folder: Path) -> None:
    csv = folder / "seed=1.csv"
    data = bytearray(csv.read_bytes())
    data[len(data) // 2] ^= 0x01  # one flipped bit, inside a number
    csv.write_bytes(bytes(data))


def lose_the_record_and_cut_the_config(folder: Path) -> None:
    """The other seeds' records still say whose folder it is."""
    config = folder / "config.yaml"
    config.write_bytes(config.read_bytes()[:100])  # still a YAML mapping, of a few keys
    (folder / "seed=1.json").unlink()


DAMAGED_SEEDS: list[tuple[Callable[[Path], None], str]] = [
    (flip_a_bit, "seed=1.csv is damaged"),
    (lose_the_record_and_cut_the_config, "seed=1.csv has no readable record"),
]


def test_a_damaged_seed_is_simulated_again_with_one_line(tmp_path: Path) -> None:
    """The same bytes again, config.yaml restored; the folder is never refused."""
    folder = tmp_path / "r"
    assert run_into(folder, cwd=tmp_path).returncode == 0
    before = snapshot(folder)
    for damage, said in DAMAGED_SEEDS:
        damage(folder)
        again = run_into(folder, cwd=tmp_path)
        assert again.returncode == 0, again.stderr
        warnings = [line for line in again.stdout.splitlines() if "simulating it again" in line]
        assert len(warnings) == 1 and said in warnings[0], (said, warnings)
        assert snapshot(folder) == before, said


def test_a_truncated_data_json_heals(tmp_path: Path) -> None:
    release = write_csv(tiny_release(), tmp_path / "release")
    args = ["env=movielens", f"env.data_dir={release}", f"env.cache_dir={tmp_path / 'cache'}",
            "env.min_user_ratings=20", "env.min_item_ratings=30", "env.rank=3",
            "env.n_states=3", "env.n_arms=6"]  # fmt: skip
    folder = tmp_path / "r"
    assert run_into(folder, *args, cwd=tmp_path).returncode == 0
    before = snapshot(folder)
    text = (folder / "data.json").read_bytes()
    (folder / "data.json").write_bytes(text[: len(text) // 3])
    again = run_into(folder, *args, cwd=tmp_path)
    assert again.returncode == 0 and "Traceback" not in again.stderr, again.stderr
    assert snapshot(folder) == before


def test_sweeping_over_data_folders_gives_each_its_folder(tmp_path: Path) -> None:
    a = write_csv(tiny_release(seed=1), tmp_path / "a/ml")
    b = write_csv(tiny_release(seed=2), tmp_path / "b/ml")  # the same last name, other data
    done = nslb("run", "-m", "env=movielens", f"env.data_dir={a},{b}",
                f"env.cache_dir={tmp_path / 'cache'}", "env.min_user_ratings=20",
                "env.min_item_ratings=30", "env.rank=3", "env.n_states=3", "env.n_arms=6",
                "run.n_seeds=2", *QUICK, "hydra.sweep.dir=s", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    folders = sorted(p.parent for p in (tmp_path / "s").rglob("seed=0.csv"))
    assert len(folders) == 2 and all("env.data_dir=ml-" in f.name for f in folders)
    fingerprints = {json.loads((f / "data.json").read_text())["fingerprint"] for f in folders}
    assert len(fingerprints) == 2


def test_a_name_longer_than_the_filesystem_allows_is_shortened(tmp_path: Path) -> None:
    long = ["agent=exp4s", "agent.gamma=0.123456789", "agent.alpha=0.000123456789",
            "agent.reward_low=-0.987654321", "agent.reward_high=1.987654321",
            "env.n_arms=6", "env.n_states=4", "env.sigma=0.4999999", "env.prior_sd=0.1999999",
            "env.switch_prob=0.0049999", "env.period=199", "env.stay_concentration=795.5",
            "env.move_concentration=1.25", "env.prior_strength=3.5", "env.model=prior",
            "env.dynamics=fixed", "env.reward=gaussian"]  # fmt: skip
    assert len(",".join(long[1:])) > 255, "a name no filesystem takes"
    ran = nslb("run", "-m", *long, *QUICK, "run.n_seeds=1", "hydra.sweep.dir=s", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    (csv,) = (tmp_path / "s").rglob("seed=0.csv")
    assert len(csv.parent.name.encode()) <= 200
    assert "gamma: 0.123456789" in (csv.parent / "config.yaml").read_text()


def overwrite_moments(duration: float, count: int) -> list[tuple[float, int]]:
    rng = np.random.default_rng(7)
    signals = (signal.SIGINT, signal.SIGTERM, signal.SIGKILL)
    return [
        (float(d), int(signals[i % 3])) for i, d in enumerate(rng.uniform(0.3, duration, count))
    ]


TWENTY = pytest.param(20, id="twenty", marks=pytest.mark.slow)


@pytest.mark.parametrize("count", [pytest.param(3, id="fast"), TWENTY])
def test_an_interrupted_overwrite_leaves_the_old_results_whole(count: int, tmp_path: Path) -> None:
    old_args = [*RUN, "run.n_seeds=12", "run.batch_size=2", "hydra.run.dir=r"]
    new_args = [*RUN, "run.n_seeds=12", "run.batch_size=2", "env.horizon=400",
                "run.overwrite=true", "hydra.run.dir=r"]  # fmt: skip
    assert nslb(*new_args[:-1], "hydra.run.dir=new", cwd=tmp_path).returncode == 0
    new = snapshot(tmp_path / "new")
    assert nslb(*old_args, cwd=tmp_path).returncode == 0
    for trial, (delay, signum) in enumerate(overwrite_moments(2.5, count)):
        if trial:  # the old results back, by an overwrite of their own
            old_again = nslb(*old_args[:-1], "run.overwrite=true", "hydra.run.dir=r", cwd=tmp_path)
            assert old_again.returncode == 0, old_again.stderr
        old = snapshot(tmp_path / "r")
        stop_after(new_args, delay, signum, cwd=tmp_path)
        now = snapshot(tmp_path / "r")
        swapping = (tmp_path / "r/.nslb-overwrite/COMPLETE").exists()  # killed mid-swap
        assert now in (old, new) or (signum == signal.SIGKILL and swapping), (
            f"trial {trial}: a mix after signal {signum} at {delay:.2f} s"
        )
        finished = nslb(*new_args, cwd=tmp_path)  # the next run completes (or redoes) it
        assert finished.returncode == 0, finished.stderr
        assert snapshot(tmp_path / "r") == new
        assert not temporaries(tmp_path / "r") and not (tmp_path / "r/.nslb-overwrite").exists()


def test_plot_never_replaces_a_file_it_did_not_write(tmp_path: Path) -> None:
    assert run_into(tmp_path / "r", cwd=tmp_path).returncode == 0
    out = tmp_path / "figures"
    out.mkdir()
    (out / "summary.md").write_text("my own notes\n")
    refused = nslb("plot", "r", "--out", "figures", cwd=tmp_path)
    assert refused.returncode == 2 and "summary.md" in one_error_line(refused.stderr)
    assert (out / "summary.md").read_text() == "my own notes\n"
    assert not list(out.glob("*.png"))
    (out / "summary.md").unlink()
    for _ in range(2):  # its own files it replaces
        plotted = nslb("plot", "r", "--out", "figures", cwd=tmp_path)
        assert plotted.returncode == 0, plotted.stderr
