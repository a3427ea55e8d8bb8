"""Plugins that fail in any way are disabled with one warning line; nslb goes on.

A plugin module that calls ``sys.exit()`` or ``os._exit()`` at import, raises ``SystemExit``
or its own ``BaseException`` subclass, raises an ordinary exception (one whose message
cannot even be printed, too), a ``Params`` whose default construction raises, a class whose
attribute access raises: ``nslb list`` still works and prints exactly one warning line naming
the plugin, ``nslb run agent=mts`` does not import it (no line); choosing it is one error line.
A ``KeyboardInterrupt`` (or nslb's own SIGTERM exception) during a plugin's import still
stops nslb. Fake distributions are dist-info folders on ``PYTHONPATH``
(``tests.helpers.plugins``).
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from nslb_cli.agents import GROUP, check_agent_class
from nslb_cli.common.errors import describe_error
from nslb_cli.common.registry import PluginError, Registry
from nslb_cli.common.stopping import Terminated, stopped_by
from nslb_cli.envs import GROUP as ENV_GROUP
from tests.helpers.cli import said
from tests.helpers.plugins import fake_distribution, nslb_with

QUICK = ["env.horizon=60", "run.n_seeds=1", "run.progress=false"]
BUILT_IN_AGENTS = (
    "cd_lints", "cd_linucb", "cd_ts", "cd_ucb", "exp3s", "exp4s", "mts", "oracle", "random",
    "sw_mucb", "sw_umucb", "umts",
)  # fmt: skip
BUILT_IN_ENVS = ("movielens", "synthetic")

AGENT_BASE = """
from dataclasses import dataclass

import numpy as np

from nslb_cli.api import Agent


class Base(Agent):
    fixed_arms = True

    def act(self, t, contexts):
        return np.zeros(self.problem.n_runs, dtype=np.int64)

    def update(self, t, contexts, actions, rewards):
        pass
"""

# name -> (module source, the warning's reason after "cannot use <module>:Agent: ")
BROKEN = {
    "exits": ("import sys\nsys.exit(3)\n", "SystemExit: 3"),
    "exits_quietly": ("raise SystemExit\n", "SystemExit"),
    "exits_with_text": ("import sys\nsys.exit('no GPU here')\n", "SystemExit: no GPU here"),
    "odd": (
        "class Odd(BaseException):\n    pass\n\nraise Odd('an odd failure')\n",
        "Odd: an odd failure",
    ),
    "ends": ("import os\nos._exit(3)\n",
             "its import ended its process with status 3 before it finished"),
    "generator_exit": ("raise GeneratorExit('closed')\n", "GeneratorExit: closed"),
    "runtime": ("raise RuntimeError('broken at import\\nsecond line')\n",
                "RuntimeError: broken at import"),
    "unprintable": (
        "class Unprintable(Exception):\n    def __str__(self):\n        raise ValueError\n\n"
        "raise Unprintable()\n",
        "Unprintable",
    ),
    "params_exit": (
        AGENT_BASE
        + "\n@dataclass\nclass P:\n    name: str = 'params_exit'\n\n"
        "    def __post_init__(self):\n        raise SystemExit('no defaults')\n\n\n"
        "class Agent(Base):\n    Params = P\n",
        "P() (its defaults) raises SystemExit: no defaults",
    ),
    "params_error": (
        AGENT_BASE
        + "\n@dataclass\nclass P:\n    name: str = 'params_error'\n\n"
        "    def __post_init__(self):\n        raise ZeroDivisionError('defaults')\n\n\n"
        "class Agent(Base):\n    Params = P\n",
        "P() (its defaults) raises ZeroDivisionError: defaults",
    ),
    "attribute": (
        AGENT_BASE
        + "\n\nclass Raising:\n    def __get__(self, obj, owner):\n"
        "        raise SystemExit('attribute access')\n\n\n"
        "@dataclass\nclass P:\n    name: str = 'attribute'\n\n\n"
        "class Agent(Base):\n    Params = P\n    fixed_arms = Raising()\n",
        "SystemExit: attribute access",
    ),
}  # fmt: skip


def install(site: Path, name: str, source: str, group: str = GROUP) -> str:
    """A distribution ``broken-<name> 1.0`` whose entry point ``name`` is ``<module>:Agent``
    of a module with ``source``; returns the PYTHONPATH."""
    module = f"plugin_{name}"
    site.mkdir(parents=True, exist_ok=True)
    (site / f"{module}.py").write_text(source)
    fake_distribution(site, f"broken-{name}", "1.0", {group: {name: f"{module}:Agent"}})
    return str(site)


def warning_for(name: str) -> str:
    """The line that says why the plugin ``name`` of ``BROKEN`` is left out."""
    return (
        f"nslb: warning: agent '{name}' (broken-{name} 1.0): cannot use "
        f"plugin_{name}:Agent: {BROKEN[name][1]}"
    )


@pytest.mark.slow
@pytest.mark.parametrize("name", list(BROKEN))
def test_a_plugin_failing_in_any_way_is_one_warning_and_the_rest_works(
    tmp_path: Path, name: str
) -> None:
    """Each alone, through ``nslb list``, a run of nslb's own agent and one choosing it (in
    CI: all at once, below)."""
    source, _ = BROKEN[name]
    path = install(tmp_path / "site", name, source)
    warning = warning_for(name)
    listed = nslb_with(path, "list", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert listed.stderr.splitlines() == [warning]
    shown = {line.split()[0] for line in listed.stdout.splitlines() if line.startswith("  ")}
    assert set(BUILT_IN_AGENTS) | set(BUILT_IN_ENVS) <= shown and name not in shown
    run = nslb_with(path, "run", "agent=mts", *QUICK, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert said(run.stderr) == []  # nslb's own agent: no plugin imported
    assert (tmp_path / "outputs/default/synthetic/mts/env.horizon=60/seed=0.csv").is_file()
    (tmp_path / "chosen").mkdir()
    chosen = nslb_with(path, "run", f"agent={name}", *QUICK, cwd=tmp_path / "chosen")
    assert chosen.returncode == 2
    assert chosen.stderr.splitlines() == [  # the warning of the plugin chosen, the refusal
        warning,
        f"nslb: error: agent.name: {warning.removeprefix('nslb: warning: ')}",
    ]


def test_an_environment_plugin_that_exits_at_import_is_left_out(tmp_path: Path) -> None:
    path = install(tmp_path / "site", "gone", "import sys\nsys.exit(1)\n", ENV_GROUP)
    warning = (
        "nslb: warning: env 'gone' (broken-gone 1.0): cannot use plugin_gone:Agent: SystemExit: 1"
    )
    listed = nslb_with(path, "list", cwd=tmp_path)
    assert listed.returncode == 0 and listed.stderr.splitlines() == [warning]
    run = nslb_with(path, "run", "agent=mts", *QUICK, cwd=tmp_path)
    assert run.returncode == 0 and said(run.stderr) == []
    chosen = nslb_with(path, "run", "agent=mts", "env=gone", *QUICK, cwd=tmp_path)
    assert chosen.returncode == 2 and chosen.stderr.splitlines()[0] == warning


def test_many_broken_plugins_at_once_give_one_warning_each(tmp_path: Path) -> None:
    """Each warning says why its plugin is left out; the others and nslb's own entries are
    listed; a run of nslb's own agent imports none of them; choosing one is its warning
    and one error line."""
    site = tmp_path / "site"
    for name, (source, _) in BROKEN.items():
        install(site, name, source)
    listed = nslb_with(str(site), "list", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert sorted(listed.stderr.splitlines()) == sorted(map(warning_for, BROKEN))
    shown = {line.split()[0] for line in listed.stdout.splitlines() if line.startswith("  ")}
    assert set(BUILT_IN_AGENTS) | set(BUILT_IN_ENVS) <= shown and not shown & set(BROKEN)
    run = nslb_with(str(site), "run", "agent=umts", *QUICK, cwd=tmp_path)
    assert run.returncode == 0 and said(run.stderr) == []
    (tmp_path / "chosen").mkdir()
    chosen = nslb_with(str(site), "run", "agent=odd", *QUICK, cwd=tmp_path / "chosen")
    assert chosen.returncode == 2
    warning = warning_for("odd")
    assert chosen.stderr.splitlines() == [
        warning,
        f"nslb: error: agent.name: {warning.removeprefix('nslb: warning: ')}",
    ]


def test_ctrl_c_during_a_plugin_import_still_stops_nslb(tmp_path: Path) -> None:
    path = install(tmp_path / "site", "interrupting", "raise KeyboardInterrupt\n")
    for command in (["list"], ["run", "agent=interrupting", *QUICK]):
        stopped = nslb_with(path, *command, cwd=tmp_path)
        assert stopped.returncode == 130, stopped.stderr
        assert stopped.stderr.splitlines() == ["nslb: interrupted"]
    assert not (tmp_path / "outputs").exists()


def test_params_that_refuse_their_defaults_with_a_config_error_stay_usable(
    tmp_path: Path,
) -> None:
    """A ``ConfigError`` from ``Params()`` is a plugin's "this setting must be given": the
    entry is listed and runs once the setting is given (the one-line error says which)."""
    source = AGENT_BASE + (
        "\nfrom nslb_cli.api import check\n\n\n@dataclass\nclass P:\n"
        "    name: str = 'needs_path'\n    path: str = ''\n\n"
        "    def __post_init__(self):\n"
        "        check.require(bool(self.path), 'path', 'must be set')\n"
        "\n\nclass Agent(Base):\n    Params = P\n"
    )
    path = install(tmp_path / "site", "needs_path", source)
    listed = nslb_with(path, "list", cwd=tmp_path)
    assert listed.returncode == 0 and listed.stderr == ""
    assert any(line.split()[:1] == ["needs_path"] for line in listed.stdout.splitlines())
    unset = nslb_with(path, "run", "agent=needs_path", *QUICK, cwd=tmp_path)
    assert unset.returncode == 2
    assert unset.stderr.splitlines() == ["nslb: error: agent.path: must be set"]
    given = nslb_with(path, "run", "agent=needs_path", "agent.path=x", *QUICK, cwd=tmp_path)
    assert given.returncode == 0, given.stderr


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder on ``sys.path`` for fake distributions, seen by a fresh ``Registry``."""
    folder = tmp_path / "site"
    folder.mkdir()
    monkeypatch.syspath_prepend(str(folder))
    importlib.invalidate_caches()
    return folder


def registry_with(site: Path, name: str, source: str) -> Registry:
    group = "nslb.test_faults"
    install(site, name, source, group)
    importlib.invalidate_caches()
    return Registry("agent", group, check_agent_class)


STOPS: list[tuple[str, type[BaseException]]] = [
    ("raise KeyboardInterrupt\n", KeyboardInterrupt),
    (
        "from nslb_cli.common.stopping import Terminated\nraise Terminated('signal 15')\n",
        Terminated,
    ),
    (
        "try:\n    raise KeyboardInterrupt\nexcept KeyboardInterrupt:\n"
        "    raise SystemError('interrupted in compiled code')\n",
        SystemError,
    ),
]
"""Ctrl-C, SIGTERM, and an error raised by compiled code that Ctrl-C interrupted."""


def test_the_registry_lets_a_request_to_stop_through(site: Path) -> None:
    for n, (source, stop) in enumerate(STOPS):
        registry = registry_with(site, f"stopping{n}", source)
        with pytest.raises(stop):
            registry[f"stopping{n}"]
        assert registry.problems() == [], stop
        assert f"plugin_stopping{n}" not in sys.modules


def test_the_registry_disables_a_plugin_that_exits_and_keeps_saying_why(site: Path) -> None:
    registry = registry_with(site, "exits", "import sys\nsys.exit(4)\n")
    for _ in range(2):  # imported once; the second use repeats the reason
        with pytest.raises(PluginError, match=r"cannot use plugin_exits:Agent: SystemExit: 4$"):
            registry["exits"]
    assert registry.load_all() == {}
    assert len(registry.problems()) == 1


def test_stops_and_describe_error() -> None:
    assert stopped_by(KeyboardInterrupt()) and stopped_by(Terminated("x"))
    assert stopped_by(SystemExit(1)) is None and stopped_by(RuntimeError("x")) is None

    class Plugins(BaseException):
        pass

    assert stopped_by(Plugins()) is None  # a plugin's own BaseException: not a stop

    class Unprintable(Exception):
        def __str__(self) -> str:
            raise ValueError

    assert describe_error(Unprintable()) == "Unprintable"
    assert describe_error(SystemExit()) == "SystemExit"
    assert describe_error(RuntimeError("a\nb")) == "RuntimeError: a"


# A plugin agent that misbehaves in round 6 of every run: ``{action}``.
HOSTILE = (
    AGENT_BASE
    + """
import os
import signal
import sys
import time


@dataclass
class P:
    name: str = "{name}"


class Agent(Base):
    Params = P

    def act(self, t, contexts):
        if t == 5:
            {action}
        return super().act(t, contexts)
"""
)
PATCHED = "import {module} as m; m.{constant} = 2; from nslb_cli.cli import main; main()"
"""``nslb`` with a time limit of 2 s (``constant`` of ``module``) in place of minutes."""


def hostile(site: Path, name: str, action: str) -> str:
    """Install agent ``name`` doing ``action`` in round 6 (see ``HOSTILE``)."""
    return install(site, name, HOSTILE.format(name=name, action=action))


def nslb_patched(pythonpath: str, module: str, constant: str, *args: str, cwd: Path) -> Any:
    """``nslb args…`` whose time limit ``module.constant`` is 2 s."""
    code = PATCHED.format(module=module, constant=constant)
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": pythonpath},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


SETTING = "synthetic (dynamics=fixed, horizon=120, period=40)"


def test_a_check_that_hangs_is_one_line_naming_the_plugin_and_the_check(tmp_path: Path) -> None:
    path = hostile(tmp_path / "site", "hangs", "time.sleep(10**6)")
    checked = nslb_patched(path, "nslb_cli.cli.check", "STEP_SECONDS", "check", "agent=hangs",
                           cwd=tmp_path)  # fmt: skip
    assert checked.returncode == 1, checked.stderr
    assert said(checked.stderr) == [
        f"nslb: agent 'hangs' (broken-hangs 1.0): the check 'runs' on {SETTING} did not "
        "finish within 2 s"
    ]


def test_a_plugin_that_blocks_at_import_blocks_nothing_else(tmp_path: Path) -> None:
    """``nslb run`` of nslb's own agent does not import it; ``nslb list`` and a run that
    chooses it give up on it after a time limit, with one line naming it."""
    path = install(tmp_path / "site", "blocks", "import time\ntime.sleep(10**6)\n")
    run = nslb_with(path, "run", "agent=mts", *QUICK, cwd=tmp_path)
    assert run.returncode == 0 and said(run.stderr) == []
    warning = (
        "nslb: warning: agent 'blocks' (broken-blocks 1.0): cannot use plugin_blocks:Agent: "
        "its import did not finish within 2 s"
    )
    listed = nslb_patched(path, "nslb_cli.common.registry", "IMPORT_SECONDS", "list",
                          cwd=tmp_path)  # fmt: skip
    assert listed.returncode == 0 and listed.stderr.splitlines() == [warning]
    assert "mts" in listed.stdout
    chosen = nslb_patched(path, "nslb_cli.common.registry", "IMPORT_SECONDS", "run",
                          "agent=blocks", *QUICK, cwd=tmp_path)  # fmt: skip
    assert chosen.returncode == 2
    assert chosen.stderr.splitlines()[-1] == (
        f"nslb: error: agent.name: {warning.removeprefix('nslb: warning: ')}"
    )


ENDINGS = {
    "raises SystemExit": ("raise SystemExit(0)", "raised SystemExit: 0"),
    "calls os._exit": ("os._exit(3)", "ended its process with status 3 before it finished"),
}


def test_a_plugin_that_ends_its_process_fails_its_job_and_nothing_else(
    tmp_path: Path,
) -> None:
    for n, (ending, (action, reason)) in enumerate(ENDINGS.items()):
        cwd = tmp_path / str(n)
        path = hostile(cwd / "site", "ends", action)
        run = nslb_with(path, "run", "agent=ends", *QUICK, cwd=cwd)
        assert run.returncode == 2 and said(run.stderr) == [f"nslb: error: the job {reason}"]
        if ending == "calls os._exit":  # a sweep sees either ending as the job's one line
            sweep = nslb_with(path, "run", "-m", "agent=ends,mts", *QUICK, cwd=cwd)
            assert sweep.returncode == 1
            assert sweep.stderr.splitlines()[-2:] == [
                "nslb: 1 of 2 sweep jobs failed:",
                f"  agent=ends env.horizon=60 run.n_seeds=1 run.progress=False: the job {reason}",
            ]
            assert (cwd / "outputs/default/synthetic/mts/env.horizon=60/seed=0.csv").is_file()
        checked = nslb_with(path, "check", "agent=ends", cwd=cwd)
        assert checked.returncode == 1
        if ending == "raises SystemExit":  # a verdict: the checks that need complete runs skipped
            assert f"FAIL  runs                    {SETTING}: the agent raised SystemExit: 0" in (
                checked.stdout.splitlines()
            )
            assert checked.stdout.splitlines()[-1] == "1 of 9 checks failed, 7 not checked"
        else:
            assert said(checked.stderr) == [
                f"nslb: agent 'ends' (broken-ends 1.0): the check 'runs' on {SETTING} {reason}"
            ]


def test_params_that_end_the_process_for_a_value_are_one_line(tmp_path: Path) -> None:
    """``os._exit`` in a plugin's Params (or its memory declaration), which the check of
    every job runs, ends a child process that checks it first, not nslb."""
    source = AGENT_BASE + (
        "\n\n@dataclass\nclass P:\n    name: str = 'grim'\n    x: int = 0\n\n"
        "    def __post_init__(self):\n        if self.x == 2:\n"
        "            import os; os._exit(3)\n"
        "\n\nclass Agent(Base):\n    Params = P\n"
    )
    path = install(tmp_path / "site", "grim", source)
    for command in (["run", *QUICK, "agent.x=2"], ["run", "-m", *QUICK, "agent.x=1,2"]):
        refused = nslb_with(path, *command, "agent=grim", cwd=tmp_path)
        assert refused.returncode == 2, refused.stderr
        (line,) = refused.stderr.splitlines()
        assert line.startswith("nslb: error: agent: ") and "ended" in line, line
    assert not (tmp_path / "outputs").exists(), "refused before any job ran"


def test_params_that_raise_system_exit_for_a_value_are_one_line(tmp_path: Path) -> None:
    source = AGENT_BASE + (
        "\n\n@dataclass\nclass P:\n    name: str = 'picky'\n    x: int = 0\n\n"
        "    def __post_init__(self):\n        if self.x:\n            raise SystemExit(0)\n"
        "\n\nclass Agent(Base):\n    Params = P\n"
    )
    path = install(tmp_path / "site", "picky", source)
    refusal = ["nslb: error: agent: picky refuses these values: SystemExit: 0"]
    for command in (["run", *QUICK], ["check"]):
        refused = nslb_with(path, *command, "agent=picky", "agent.x=1", cwd=tmp_path)
        assert refused.returncode == 2 and refused.stderr.splitlines() == refusal
