"""`nslb run env=movielens` and `nslb data` end to end on ML-100K, in temporary folders."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from nslb_cli.cli import main
from nslb_cli.envs.synthetic import SyntheticParams
from nslb_cli.runner.config import RunConfig, RunSettings
from nslb_cli.runner.job import data_record
from tests.helpers.agents import agent_params
from tests.helpers.cli import NSLB
from tests.helpers.movielens import (
    TINY_RUN,
    needs_ml_100k,
    tiny_release,
    write_csv,
    write_generic,
)
from tests.helpers.paths import ML_100K


def nslb(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [NSLB, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False
    )


SMALL = [
    f"env.data_dir={ML_100K}",
    "env.min_user_ratings=100",
    "env.min_item_ratings=100",
]


@pytest.mark.slow
@needs_ml_100k
def test_mts_random_oracle_on_ml100k(tmp_path: Path) -> None:
    done = nslb(
        "run", "-m", "env=movielens", "agent=mts,random,oracle", *SMALL, "env.horizon=200",
        "run.n_seeds=2", f"env.cache_dir={tmp_path / 'cache'}", "run.progress=false",
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    final = {}
    for agent in ("mts", "random", "oracle"):
        folder = tmp_path / "outputs/default/movielens" / agent
        (run,) = [p.parent for p in folder.glob("*/config.yaml")]
        assert "data_dir" not in run.name, "local paths stay out of folder names"
        frames = [pd.read_csv(run / f"seed={s}.csv") for s in (0, 1)]
        assert all(len(f) == 200 for f in frames)
        final[agent] = [f["cum_regret"].iloc[-1] for f in frames]
        if agent == "oracle":
            assert all((f["regret"] == 0).all() for f in frames)
    assert final["oracle"] == [0, 0]
    assert sum(final["mts"]) < sum(final["random"])
    assert len(list((tmp_path / "cache/prepared").glob("*.npz"))) == 1, "built once, then read"


def test_data_prepare_builds_then_reads(tmp_path: Path) -> None:
    folder = write_csv(tiny_release(), tmp_path / "release")
    settings = [
        f"env.data_dir={folder}",
        f"env.cache_dir={tmp_path / 'cache'}",
        "env.min_user_ratings=20",
        "env.min_item_ratings=30",
        "env.rank=3",
        "env.n_states=3",
    ]
    built = nslb("data", "prepare", *settings, cwd=tmp_path)
    assert built.returncode == 0, built.stderr
    truth = tiny_release()
    raw = f"{len(truth.values)} by {len(np.unique(truth.users))} users on 40 movies"
    assert raw in built.stdout and "built in" in built.stdout
    assert "train/test agreement" in built.stdout and "csv format" in built.stdout
    again = nslb("data", "prepare", "--json", *settings, cwd=tmp_path)
    report = json.loads(again.stdout)
    assert report["cache"]["hit"] and report["settings"]["rank"] == 3
    assert Path(report["cache"]["file"]).parent == tmp_path / "cache/prepared"
    assert len(report["clusters"]["test_sizes"]) == 3


def test_data_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.setenv("NSLB_CACHE", str(tmp_path / "elsewhere"))
    main(["data", "path"])
    assert capsys.readouterr().out.strip() == str(tmp_path / "elsewhere")
    main(["data", "path", f"env.cache_dir={tmp_path / 'setting'}"])
    assert capsys.readouterr().out.strip() == str(tmp_path / "setting")


def test_data_errors_are_one_line(tmp_path: Path, capsys) -> None:
    for args, expected in (
        (["prepare", f"env.data_dir={tmp_path}"], "no ratings file found"),
        (["prepare", "agent=umts"], "expected env.key=value settings"),
        (["prepare", "env.release=ml-20m"], "no pinned checksum for release 'ml-20m'"),
        (["prepare", "env.rnk=3"], "env.rnk: unknown key for env 'movielens'"),
        (["frobnicate"], "unknown command 'frobnicate'"),
    ):
        with pytest.raises(SystemExit) as caught:
            main(["data", *args])
        stderr = capsys.readouterr().err
        assert caught.value.code == 2 and stderr.count("\n") == 1, stderr
        assert stderr.startswith("nslb: error: ") and expected in stderr


def test_own_ratings_without_genres_run_end_to_end(tmp_path: Path) -> None:
    """A folder with only ratings.csv (user,item,rating; text ids) runs; data.json beside the
    results names the data (fingerprint, release, source) and says how hard it is."""
    folder = write_generic(
        tiny_release(half_stars=True), tmp_path / "mine", genres=False, text_ids=True
    )
    cache = f"env.cache_dir={tmp_path / 'cache'}"
    done = nslb("run", "env=movielens", "agent=mts", f"env.data_dir={folder}", cache,
                *TINY_RUN, cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    (run,) = [p.parent for p in (tmp_path / "outputs").rglob("config.yaml")]
    assert sorted(p.name for p in run.glob("seed=*.csv")) == ["seed=0.csv", "seed=1.csv"]
    assert len(pd.read_csv(run / "seed=0.csv")) == 60
    record = json.loads((run / "data.json").read_text())
    assert (
        record["fingerprint"] == hashlib.sha256((folder / "ratings.csv").read_bytes()).hexdigest()
    )
    assert record["release"] == "mine" and record["source"] == str(folder)
    d = record["diagnostics"]
    assert d["source"]["format"] == "generic" and d["scale"]["step"] == 0.5
    assert d["penalty"]["mode"] == "auto" and d["penalty"]["value"] > 0
    assert d["expected_changes_per_run"] == pytest.approx(59 * (1 - 0.9975), rel=1e-6)
    assert d["squared_distance"]["test_users"]["between_users"] > 0
    assert sum(d["clusters"]["test_sizes"]) == d["filtered"]["users"]
    # other data under the same folder name: refused, the results are kept
    write_generic(tiny_release(seed=1, half_stars=True), folder, genres=False, text_ids=True)
    again = nslb("run", "env=movielens", "agent=mts", f"env.data_dir={folder}", cache,
                 *TINY_RUN, "run.n_seeds=3", cwd=tmp_path)  # fmt: skip
    assert again.returncode != 0 and "holds results of other data" in again.stderr
    assert not (run / "seed=2.csv").exists()


def test_no_data_json_for_an_environment_without_data_files(tmp_path: Path) -> None:
    config = RunConfig(
        name="t", env=SyntheticParams(), agent=agent_params("mts"), run=RunSettings()
    )
    assert data_record(config) is None
