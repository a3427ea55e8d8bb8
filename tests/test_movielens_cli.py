"""`nslb run env=movielens` and `nslb data` end to end on ML-100K, in temporary folders."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from nslb_cli.cli import main
from tests.movielens_data import ML_100K, needs_ml_100k, tiny_release, write_csv
from tests.test_cli import NSLB


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
        (["prepare", "env.rnk=3"], "Could not override 'env.rnk'"),
        (["frobnicate"], "unknown command 'frobnicate'"),
    ):
        with pytest.raises(SystemExit) as caught:
            main(["data", *args])
        stderr = capsys.readouterr().err
        assert caught.value.code == 2 and stderr.count("\n") == 1, stderr
        assert stderr.startswith("nslb: error: ") and expected in stderr
