"""``nslb warmup`` compiles the kernels of MovieLens's contextual worlds and of the successors'
families too, quietly."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.helpers.cli import COMPILING, NSLB
from tests.helpers.movielens import TINY_RUN, tiny_release, write_generic

WARM = "from nslb_cli.runner.warmup import warm_up; warm_up(print, names=['cd_linucb', 'sl_ec'])"


def test_after_warmup_a_movielens_or_switching_run_compiles_nothing(tmp_path: Path) -> None:
    """A linear agent's kernels run only on contextual worlds, SL-EC's only where outcome laws
    are known: warm_up plays them on its own small ratings file and switching latent problem,
    so the first run after it compiles nothing (they used to compile there)."""
    env = os.environ | {"NSLB_CACHE": str(tmp_path / "cache")}
    warm = subprocess.run(
        [sys.executable, "-c", WARM], env=env, check=False, capture_output=True, text=True
    )
    assert sorted(line.split(":")[0] for line in warm.stdout.splitlines()) == ["cd_linucb", "sl_ec"]
    assert COMPILING not in warm.stderr, "its lines would advise running nslb warmup"
    data = write_generic(tiny_release(), tmp_path / "release")
    run = subprocess.run(
        [NSLB, "run", "env=movielens", f"env.data_dir={data}", *TINY_RUN, "agent=cd_linucb",
         f"env.cache_dir={tmp_path / 'data-cache'}"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert COMPILING not in run.stderr
    switching = subprocess.run(
        [NSLB, "run", "env=switching_latent", "env.horizon=300", "agent=sl_ec",
         "agent.exploration=64", "run.progress=false"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert switching.returncode == 0, switching.stderr
    assert COMPILING not in switching.stderr


def test_after_warmup_a_learned_model_compiles_nothing(tmp_path: Path) -> None:
    """EM's forward-backward pass is compiled by the warm-up too (its one signature)."""
    env = os.environ | {"NSLB_CACHE": str(tmp_path / "cache")}
    warm = "from nslb_cli.runner.warmup import _warm_learning; print(_warm_learning())"
    done = subprocess.run([sys.executable, "-c", warm], env=env, capture_output=True, text=True)
    assert done.stdout.startswith("learning (EM): ") and COMPILING not in done.stderr
    fitted = (
        "import numpy as np; from nslb_cli.learning import Logs, fit; "
        "fit(Logs(np.zeros((1, 60), dtype=np.int64), np.ones((1, 60)), np.array([60])), 3, 2)"
    )
    again = subprocess.run([sys.executable, "-c", fitted], env=env, capture_output=True, text=True)
    assert again.returncode == 0 and COMPILING not in again.stderr, again.stderr
