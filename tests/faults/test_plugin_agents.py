"""A plugin's agent that breaks the agent contract or fails in its code, on either engine:
one line naming the plugin and what is wrong, exit status 2, no seed written; the traceback,
where its code raised, in the job's log. A broken JAX class is found as its program is
traced (a decision of the wrong type or shape, a state that changes its type) or when its
batch is back (an arm or belief out of range), before anything is written. Seeds are added
to a plugin's folder only under the plugin's version that wrote the others."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest.importorskip("jax")

from nslb_cli.jax_engine import coverage  # noqa: E402
from nslb_cli.plot import tidy  # noqa: E402
from tests.helpers.paths import EXAMPLE  # noqa: E402
from tests.helpers.plugins import fake_distribution, nslb_with  # noqa: E402

MODULE = """
from dataclasses import dataclass
import jax.numpy as jnp
import numpy as np
from nslb_epsilon_greedy.agent import EpsilonGreedy, EpsilonGreedyParams
from nslb_epsilon_greedy.jax_agent import EpsilonGreedyJax


@dataclass
class Params(EpsilonGreedyParams):
    name: str = "hostile"


class Numpy(EpsilonGreedy):
    Params = Params


class Jax(EpsilonGreedyJax):
    Params = Params
"""

ACT = """
    def act(self, c, t, key, truth):
        c, d = super().act(c, t, key, truth)
        return c, d._replace({})
"""

BROKEN = {
    "arm-beyond-k": ("jax", ACT.format("action=jnp.where(t == 5, 7, d.action)"),
                     "its arm in round 6 of seed 0 is 7, outside 0 … 4"),
    "float-arm": ("jax", ACT.format("action=d.action.astype(jnp.float32)"),
                  "act's action is float32 of shape (); it must be one integer"),
    "posterior-shape": ("jax", ACT.format("posterior=d.posterior[:2]"),
                        "act's posterior has shape (2,); it must be (5,)"),
    "belief-beyond-s": ("jax", "    reports_belief = True\n"
                        + ACT.format("belief=jnp.array(12), posterior=d.posterior + 0.2"),
                        "its believed state in round 1 of seed 0 is 12, outside 0 … 4"),
    "state-type": ("jax", '''
    def update(self, c, t, a, r, key):
        c = super().update(c, t, a, r, key)
        return c._replace(pulls=c.pulls.astype(jnp.float32))
''', "update turns a state entry of float64 (5,) into float32 (5,)"),
    "vector-summary": ("jax", '''
    def summary(self, c):
        return {"explorations": c.pulls}
''', "summary's 'explorations' has shape (5,); it must be one number"),
    "summary-named-seed": ("jax", '''
    def summary(self, c):
        return {"seed": c.explorations}
''', "its summary names a statistic 'seed', which the seed's record holds"),
    "numpy-summary-named-config": ("numpy", '''
    def summary(self):
        return {"config": self.explorations}
''', "its summary names a statistic 'config', which the seed's record holds"),
    "raises": ("jax", '''
    def act(self, c, t, key, truth):
        raise ValueError("no arm today")
''', "the code of agent 'hostile' (hostile-plugin 1.0) raised ValueError: no arm today"),
    "reads-a-missing-file": ("jax", '''
    def act(self, c, t, key, truth):
        open("/no/such/weights.npy")
''', "the code of agent 'hostile' (hostile-plugin 1.0) raised FileNotFoundError"),
    "numpy-arm-minus-one": ("numpy", '''
    def act(self, t, contexts):
        return np.full_like(super().act(t, contexts), -1)
''', "its arm in round 1 of seed 0 is -1, outside 0 … 4"),
}  # fmt: skip


def install(site: Path, engine: str, body: str) -> str:
    """The hostile plugin: ``body`` added to its JAX class, or to its numpy class."""
    site.mkdir(parents=True)
    source = (
        MODULE + body
        if engine == "jax"
        else MODULE.replace(
            "class Numpy(EpsilonGreedy):\n    Params = Params\n",
            "class Numpy(EpsilonGreedy):\n    Params = Params\n" + body,
        )
    )
    (site / "hostile_plugin.py").write_text(source)
    fake_distribution(site, "hostile-plugin", "1.0", {
        "nslb.agents": {"hostile": "hostile_plugin:Numpy"},
        "nslb.jax_agents": {"hostile": "hostile_plugin:Jax"},
    })  # fmt: skip
    return os.pathsep.join([str(site), str(EXAMPLE / "src")])


FAST = ("arm-beyond-k", "float-arm", "raises", "numpy-arm-minus-one")
"""One case of each kind in make test: found after the batch, while tracing, code that raised,
the numpy engine's; the others run with make test-full."""


@pytest.mark.parametrize(
    "case", [pytest.param(c, marks=() if c in FAST else pytest.mark.slow) for c in BROKEN]
)
def test_a_broken_agent_is_one_line_naming_its_plugin_and_writes_nothing(
    tmp_path: Path, case: str
) -> None:
    engine, body, said = BROKEN[case]
    path = install(tmp_path / "site", engine, body)
    folder = tmp_path / "out"
    done = nslb_with(
        path,
        "run",
        "agent=hostile",
        f"run.engine={engine}",
        "env.horizon=30",
        "run.n_seeds=2",
        f"hydra.run.dir={folder}",
        cwd=tmp_path,
    )
    assert done.returncode == 2, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("nslb: error:")]
    assert errors == [done.stderr.strip().splitlines()[-1]], done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert "agent 'hostile' (hostile-plugin 1.0)" in errors[0] and said in errors[0], errors
    assert not list(folder.glob("seed=*")) and not (folder / "config.yaml").exists()
    if case == "raises":
        assert "ValueError: no arm today" in (folder / "nslb.log").read_text()


@pytest.mark.parametrize(
    "engine",  # slow: the JAX engine's, whose numbers join the plugin's version as numpy's do
    ["numpy", pytest.param("jax", marks=pytest.mark.slow)],
)
def test_seeds_are_added_only_under_the_plugins_version_that_wrote_the_others(
    tmp_path: Path, engine: str
) -> None:
    path = install(tmp_path / "site", engine, "")
    out = [f"run.engine={engine}", "env.horizon=30", f"hydra.run.dir={tmp_path / 'out'}"]
    first = nslb_with(path, "run", "agent=hostile", "run.n_seeds=2", *out, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    written = {p.name: p.read_bytes() for p in (tmp_path / "out").glob("seed=*")}
    info = next((tmp_path / "site").glob("*.dist-info"))
    (info / "METADATA").write_text(
        (info / "METADATA").read_text().replace("Version: 1.0", "Version: 2.0")
    )
    info.rename(info.with_name("hostile_plugin-2.0.dist-info"))
    more = nslb_with(path, "run", "agent=hostile", "run.n_seeds=4", *out, cwd=tmp_path)
    assert more.returncode == 2, engine
    (line,) = more.stderr.strip().splitlines()[-1:]
    assert "hostile-plugin 1.0" in line and "hostile-plugin 2.0" in line, line
    assert "overwrite" in line, line
    assert {p.name: p.read_bytes() for p in (tmp_path / "out").glob("seed=*")} == written


ENTRY_POINTS = {
    "missing-module": ("no_such_module_of_anyones:Jax", "ModuleNotFoundError"),
    "not-a-class": ("hostile_plugin:NOT_A_CLASS", "42 is not a class"),
    "no-contract": ("hostile_plugin:Numpy", "Numpy has no init (the JAX agent contract"),
    "declared-twice": ("hostile_plugin:Jax", "declared by more than one package"),
}


def broken_entry_point(here: Path, case: str) -> str:
    """The hostile plugin whose JAX entry point is broken as ``ENTRY_POINTS[case]`` says."""
    path = install(here / "site", "jax", "\nNOT_A_CLASS = 42\n")
    info = next((here / "site").glob("*.dist-info"))
    text = (info / "entry_points.txt").read_text()
    (info / "entry_points.txt").write_text(
        text.replace("hostile_plugin:Jax", ENTRY_POINTS[case][0])
    )
    if case == "declared-twice":
        fake_distribution(
            here / "site",
            "twin-plugin",
            "1.0",
            {"nslb.jax_agents": {"hostile": "hostile_plugin:Jax"}},
        )
    return path


def test_a_broken_jax_entry_point_is_one_line_in_run(tmp_path: Path) -> None:
    for case, (_, said) in ENTRY_POINTS.items():
        here = tmp_path / case
        path = broken_entry_point(here, case)
        run = nslb_with(
            path,
            "run",
            "agent=hostile",
            "run.engine=jax",
            "env.horizon=30",
            f"hydra.run.dir={here / 'out'}",
            cwd=here,
        )
        assert run.returncode == 2 and "Traceback" not in run.stderr, (case, run.stderr)
        (line,) = run.stderr.strip().splitlines()
        assert "JAX agent 'hostile' (" in line and said in line, line


@pytest.mark.parametrize(
    "case",  # slow: the check reads the entry point as the run does (all four cases above)
    [pytest.param(c, marks=() if c == "no-contract" else pytest.mark.slow) for c in ENTRY_POINTS],
)
def test_a_broken_jax_entry_point_is_a_failed_check(tmp_path: Path, case: str) -> None:
    path = broken_entry_point(tmp_path, case)
    checked = nslb_with(path, "check", "agent=hostile", cwd=tmp_path)
    assert checked.returncode == 1 and "Traceback" not in checked.stderr, checked.stderr
    (engines,) = [x for x in checked.stdout.splitlines() if x.split()[1:2] == ["engines"]]
    assert engines.startswith("FAIL") and ENTRY_POINTS[case][1] in engines, engines


IMPURE = """
    traced = [0]  # a constant of each program: another in each batch size's

    def act(self, c, t, key, truth):
        c, d = super().act(c, t, key, truth)
        self.traced[0] += 1
        return c, d._replace(action=jnp.where(t == 9, self.traced[0] % 5, d.action))
"""


@pytest.mark.parametrize(
    ("body", "said"),
    [pytest.param(ACT.format("action=jnp.where(t == 5, 7, d.action)"),
                  "breaks the agent contract: its arm in round 6", marks=pytest.mark.slow),
     pytest.param(IMPURE, "plays seeds otherwise in a batch of 7 than of 400",
                  marks=pytest.mark.slow)],  # a second program to compile: make test-full
    ids=["arm", "impure"],
)  # fmt: skip
def test_check_fails_a_jax_class_that_breaks_the_contract_or_its_seeds(
    tmp_path: Path, body: str, said: str
) -> None:
    path = install(tmp_path / "site", "jax", body)
    checked = nslb_with(path, "check", "agent=hostile", cwd=tmp_path)
    assert checked.returncode == 1, checked.stdout
    (engines,) = [x for x in checked.stdout.splitlines() if x.split()[1:2] == ["engines"]]
    assert engines.startswith("FAIL") and said in engines, engines


@pytest.mark.slow  # the JAX engine's machinery on a CPU: make test-full
def test_a_jax_sweep_runs_a_plugins_job_after_one_of_nslbs_own(tmp_path: Path) -> None:
    path = install(tmp_path / "site", "jax", "")
    done = nslb_with(path, "run", "-m", "agent=mts,hostile", "run.engine=jax", "env.horizon=30",
                     "run.n_seeds=2", "hydra.sweep.dir=s", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    for agent in ("mts", "hostile"):
        assert len(list((tmp_path / "s/synthetic" / agent).glob("*/seed=*.csv"))) == 2
    # the plugin's version is part of its folder's numbers, not another build of the engine
    assert coverage.numbers().startswith(tidy.JAX_REVISION)
    plotted = nslb_with(path, "plot", "s", "--format", "png", cwd=tmp_path)
    assert plotted.returncode == 0 and "different nslb versions" not in plotted.stderr


def test_a_jax_class_without_its_agent_is_one_line(tmp_path: Path) -> None:
    """A package's JAX class without its numpy agent. (One under the name of one of nslb's
    own is a name two packages declare, as ``declared-twice`` above: nslb's own JAX agents
    are entry points of the same group.)"""
    path = install(tmp_path / "site", "jax", "")
    info = next((tmp_path / "site").glob("*.dist-info"))
    (info / "entry_points.txt").write_text("[nslb.jax_agents]\nhostile = hostile_plugin:Jax\n")
    run = nslb_with(path, "run", "agent=hostile", "run.engine=jax", "env.horizon=30",
                    f"hydra.run.dir={tmp_path / 'out'}", cwd=tmp_path)  # fmt: skip
    assert run.returncode == 2, run.stderr
    (line,) = run.stderr.strip().splitlines()
    assert "'hostile' is declared as a JAX agent only" in line, line


@pytest.mark.slow  # the JAX engine's machinery on a CPU: make test-full
def test_a_thinned_jax_run_checks_the_rounds_it_does_not_keep_too(tmp_path: Path) -> None:
    """The bad arm in round 6, between the rounds that every 10th keeps (keeping only the
    last, every 30th, leaves it between kept rounds too: the same check, once more through
    JAX, was a second case)."""
    path = install(tmp_path / "site", "jax", ACT.format("action=jnp.where(t == 5, 7, d.action)"))
    folder = tmp_path / "out"
    done = nslb_with(path, "run", "agent=hostile", "run.engine=jax", "env.horizon=30",
                     "run.n_seeds=2", "run.every=10", f"hydra.run.dir={folder}",
                     cwd=tmp_path)  # fmt: skip
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()[-1:]
    assert "its arm in round 6 of seed 0 is 7, outside 0 … 4" in line, line
    assert not list(folder.glob("seed=*")) and not (folder / "config.yaml").exists()


def test_without_a_job_log_the_line_says_no_traceback_is_kept(tmp_path: Path) -> None:
    path = install(tmp_path / "site", "jax", BROKEN["raises"][1])
    done = nslb_with(path, "run", "agent=hostile", "run.engine=jax", "env.horizon=30",
                     "hydra/job_logging=disabled", f"hydra.run.dir={tmp_path / 'out'}",
                     cwd=tmp_path)  # fmt: skip
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()[-1:]
    assert line.endswith("raised ValueError: no arm today (no log file keeps its traceback)")
