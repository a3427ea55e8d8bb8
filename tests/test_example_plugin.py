"""examples/epsilon_greedy installed by pip, as a researcher installs a plugin, then used.

pip builds the package from a copy of it (setuptools writes build files beside the sources;
no network: --no-build-isolation) into a target folder that the commands get on their
PYTHONPATH, so the test environment's own packages stay as they are. Slow (a build, a
parallel sweep, a plot): `make test-full`; the fast suite covers the same commands with
tests/test_plugins_cli.py.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from tests.helpers.paths import EXAMPLE
from tests.helpers.plugins import nslb_with


@pytest.mark.slow
def test_the_example_plugin_installs_runs_plots_and_passes_its_checks(tmp_path: Path) -> None:
    site, source = tmp_path / "site", tmp_path / "epsilon_greedy"
    shutil.copytree(EXAMPLE, source, ignore=shutil.ignore_patterns("build", "*.egg-info"))
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
         "--target", str(site), str(source)],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    assert list(site.glob("nslb_epsilon_greedy-0.1.0.dist-info/entry_points.txt"))
    sweep = nslb_with(
        str(site), "run", "-m", "agent=mts,epsilon_greedy", "env.dynamics=fixed",
        "env.horizon=300", "env.period=100", "run.n_seeds=4", "run.progress=false",
        "hydra/launcher=joblib", "hydra.launcher.n_jobs=2", cwd=tmp_path,
    )  # fmt: skip
    assert sweep.returncode == 0, sweep.stderr
    folders = {
        agent: tmp_path / f"outputs/default/synthetic/{agent}/env.dynamics=fixed,env.horizon=300,"
        "env.period=100"
        for agent in ("mts", "epsilon_greedy")
    }
    final = {}
    for agent, folder in folders.items():
        frames = [pd.read_csv(folder / f"seed={k}.csv") for k in range(4)]
        assert all(len(f) == 300 and f.regret.min() >= 0 for f in frames)
        final[agent] = sum(f.cum_regret.iloc[-1] for f in frames)
    assert final["mts"] < final["epsilon_greedy"], "the known model helps"
    plotted = nslb_with(str(site), "plot", "outputs", "--format", "png", cwd=tmp_path)
    assert plotted.returncode == 0, plotted.stderr
    assert "| epsilon_greedy | 4 |" in (tmp_path / "outputs/summary.md").read_text()
    checked = nslb_with(str(site), "check", "agent=epsilon_greedy", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout
    assert checked.stdout.splitlines()[-1] == "all 10 checks passed"
