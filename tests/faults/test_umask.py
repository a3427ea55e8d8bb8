"""Files follow the user's umask (0644 under umask 022, 0600 under 077), as files written by
any program do, so colleagues on a shared machine can read the results."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

from tests.helpers.cli import NSLB, QUICK


def nslb_with_umask(mask: int, *args: str, cwd: Path) -> None:
    def apply() -> None:
        os.umask(mask)

    done = subprocess.run(
        [NSLB, *args], cwd=cwd, capture_output=True, text=True, timeout=300, preexec_fn=apply
    )
    assert done.returncode == 0, done.stderr


def test_results_figures_and_tables_follow_the_umask(tmp_path: Path) -> None:
    for mask in (0o022, 0o077):  # the usual mask, and one that takes every other bit away
        here = tmp_path / oct(mask)
        here.mkdir()
        nslb_with_umask(mask, "run", *QUICK, "run.n_seeds=2", "hydra.run.dir=r", cwd=here)
        nslb_with_umask(mask, "plot", "r", "--out", "figures", cwd=here)
        files = [p for p in (here / "r").iterdir() if p.is_file() and not p.name.startswith(".")]
        files += [p for p in (here / "figures").iterdir() if p.is_file()]
        names = {p.name for p in files}
        assert {"seed=0.csv", "seed=0.json", "config.yaml", "provenance.jsonl"} <= names
        assert any(name.endswith(".png") for name in names) and "summary.md" in names
        expected = 0o666 & ~mask
        for path in files:
            assert stat.S_IMODE(path.stat().st_mode) == expected, (path.name, oct(mask))
