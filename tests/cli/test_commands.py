"""The command line itself: --version, every command's --help, shell completion, warmup."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pandas as pd
import pytest

from nslb_cli.cli import COMMANDS
from nslb_cli.cli.process import BLAS_THREADS
from nslb_cli.common.errors import ConfigError
from nslb_cli.compiled import jit as compiled
from tests.helpers.cli import NSLB, QUICK, nslb, said


def test_version_is_the_installed_package_s(tmp_path: Path) -> None:
    for flag in ("--version", "-V"):
        done = nslb(flag, cwd=tmp_path)
        assert done.returncode == 0 and done.stdout == f"nslb {version('nslb-cli')}\n"


def test_every_command_has_help(capsys: pytest.CaptureFixture[str]) -> None:
    from nslb_cli.cli import main

    for command in COMMANDS:
        try:
            main([command, "--help"])
        except SystemExit as exited:
            assert exited.code == 0, command
        done = capsys.readouterr()
        assert done.out.startswith(f"usage: nslb {command}"), done.out[:300]
        assert done.err == "", command


def test_adding_seeds_logs_the_folder_s_mean_over_all_its_seeds(tmp_path: Path) -> None:
    out = f"hydra.run.dir={tmp_path / 'r'}"
    first = nslb("run", *QUICK, "run.n_seeds=1", out, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    said = (first.stdout + first.stderr).lower()
    assert "1 seed added" in said and "over its 1 seed " in said and "nan" not in said
    more = nslb("run", *QUICK, "run.n_seeds=3", out, cwd=tmp_path)
    assert more.returncode == 0, more.stderr
    finals = [pd.read_csv(p)["cum_regret"].iloc[-1] for p in (tmp_path / "r").glob("seed=*.csv")]
    mean = sum(finals) / len(finals)
    line = next(x for x in (more.stdout + more.stderr).splitlines() if "seeds added" in x)
    assert "2 seeds added (1 already done)" in line and "over its 3 seeds" in line
    assert f"{mean:.2f} ±" in line


BASH = shutil.which("bash")


def _complete(script: str, line: str, cwd: Path) -> list[str]:
    """What bash offers for the last word of ``line`` (the cursor at its end)."""
    words = line.split(" ")
    quoted = " ".join(shlex.quote(word) for word in words)
    program = (
        f"{script}\n"
        f"COMP_LINE={shlex.quote(line)}; COMP_POINT={len(line)}; COMP_WORDS=({quoted});"
        f" COMP_CWORD={len(words) - 1}\n"
        '_nslb_complete; printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    env_path = f"{Path(NSLB).parent}:/usr/bin:/bin"
    done = subprocess.run(
        [str(BASH), "--norc", "-c", program],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": env_path, "HOME": str(Path.home())},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


@pytest.mark.skipif(BASH is None, reason="bash is not installed")
def test_bash_completes_commands_overrides_and_plot_options(tmp_path: Path) -> None:
    script = nslb("completion", "bash", cwd=tmp_path).stdout
    # Hydra's flag prints the same script, not Hydra's (which calls `nslb -sc`)
    assert nslb("run", "--shell-completion", "install=bash", cwd=tmp_path).stdout == script
    assert _complete(script, "nslb pl", tmp_path) == ["plot"]
    assert set(_complete(script, "nslb run agent=cd_", tmp_path)) == {
        "agent=cd_lints",
        "agent=cd_linucb",
        "agent=cd_ts",
        "agent=cd_ucb",
    }
    assert "agent.tau=" in _complete(script, "nslb run -m agent=cd_ucb agent.t", tmp_path)
    assert _complete(script, "nslb check agent=um", tmp_path) == ["agent=umts"]
    assert {"experiment=paper/fixed", "experiment=paper/smoke/fixed"} <= set(
        _complete(script, "nslb run experiment=", tmp_path)
    )
    assert _complete(script, "nslb run experiment=paper/kn", tmp_path) == ["experiment=paper/known"]
    assert "--reference" in _complete(script, "nslb plot outputs --ref", tmp_path)
    assert _complete(script, "nslb completion z", tmp_path) == ["zsh"]
    assert _complete(script, "nslb warmup --e", tmp_path) == ["--engine"]
    # nslb called by a path that holds the subcommand's name
    (tmp_path / "myrun").mkdir()
    (tmp_path / "myrun" / "nslb").symlink_to(NSLB)
    assert _complete(script, "myrun/nslb run agent=um", tmp_path) == ["agent=umts"]


def test_the_zsh_script_runs_the_bash_function_through_bashcompinit(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from nslb_cli.cli import main

    main(["completion", "zsh"])
    zsh = capsys.readouterr().out
    main(["completion", "bash"])
    bash = capsys.readouterr().out
    assert "bashcompinit" in zsh and zsh.endswith(bash.split("\n", 1)[1])
    with pytest.raises(SystemExit) as stop:
        main(["completion", "fish"])
    assert stop.value.code == 2


def test_a_list_without_multirun_is_one_line(tmp_path: Path) -> None:
    done = nslb("run", "agent=mts,umts", "env.horizon=60", cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("nslb: error:") and "-m" in done.stderr


def test_warmup_fails_in_one_line_when_its_cache_cannot_be_kept(tmp_path: Path) -> None:
    """At once: not after compiling every kernel (tens of seconds) for nothing."""
    (tmp_path / "file").write_text("")
    env = {**os.environ, "NSLB_CACHE": str(tmp_path / "file" / "sub")}
    env.pop("NUMBA_CACHE_DIR", None)
    done = subprocess.run(
        [NSLB, "warmup"], cwd=tmp_path, env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 2, done.stderr
    assert said(done.stderr) == [
        f"nslb: error: cannot write the compiled-code cache {tmp_path / 'file/sub/numba'}"
        f"/{compiled.sources_hash()} (Not a directory): set NSLB_CACHE to a writable folder"
    ]


def test_warmup_compiles_for_the_engines_it_is_given(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """``make install`` warms the default engine alone: the README's first run needs nothing
    more, and the JAX programs took a minute of a fresh machine's setup. The last line names
    what was compiled and the caches it is in."""
    from nslb_cli.cli import main
    from nslb_cli.jax_engine import cache
    from nslb_cli.runner import warmup

    called: list[str] = []
    monkeypatch.setattr(compiled, "CACHE", tmp_path / "numba")
    monkeypatch.setattr(cache, "folder", lambda: tmp_path / "jax")
    monkeypatch.setattr(warmup, "warm_up", lambda report: (called.append("numpy"), (3, True))[1])
    monkeypatch.setattr(warmup, "warm_up_jax", lambda report: called.append("jax") or 2)
    cases = [
        ((), ["numpy", "jax"], "3 agent settings and 2 JAX programs"),
        (("--engine", "numpy"), ["numpy"], "3 agent settings"),
        (("--engine=jax",), ["jax"], "2 JAX programs"),
    ]
    for arguments, engines, made in cases:
        called.clear()
        main(["warmup", *arguments])
        assert called == engines, arguments
        caches = ", ".join(str(tmp_path / e.replace("numpy", "numba")) for e in engines)
        line = capsys.readouterr().out.strip()
        assert line.startswith(f"nslb warmup: compiled code for {made} ready in "), line
        assert line.endswith(f" s (cache: {caches})"), line


def test_warmup_of_the_jax_engine_without_jax_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import importlib.util

    from nslb_cli.cli import main
    from nslb_cli.jax_engine import coverage

    found = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: None if n == "jax" else found(n))
    with pytest.raises(SystemExit) as stop:
        main(["warmup", "--engine", "jax"])
    assert stop.value.code == 2
    assert said(capsys.readouterr().err) == [
        f"nslb: error: nslb warmup --engine jax needs JAX: {coverage.EXTRA}"
    ]


def test_warmup_refuses_what_it_does_not_take_in_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from nslb_cli.cli import main

    for arguments in (("--engine",), ("--engine", "gpu"), ("now",)):
        with pytest.raises(SystemExit) as stop:
            main(["warmup", *arguments])
        assert stop.value.code == 2, arguments
        assert said(capsys.readouterr().err) == [
            f"nslb: error: nslb warmup takes --engine numpy or --engine jax, not "
            f"{' '.join(arguments)!r}"
        ]


def test_warmup_of_the_jax_engine_fails_in_one_line_when_its_cache_cannot_be_kept(
    tmp_path: Path,
) -> None:
    pytest.importorskip("jax")
    (tmp_path / "file").write_text("")
    env = {**os.environ, "NSLB_CACHE": str(tmp_path / "file" / "sub")}
    done = subprocess.run([NSLB, "warmup", "--engine", "jax"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, check=False)  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert said(done.stderr) == [
        f"nslb: error: cannot write the JAX programs' cache {tmp_path / 'file/sub/jax'}: set "
        "NSLB_CACHE to a writable folder"
    ]


BLAS_THREADS_SEEN = """
import json, sys
import nslb_cli.cli as cli

def dispatch(arguments):
    import numpy  # noqa: F401  (loads OpenBLAS, which reads its thread count now)
    import scipy.linalg  # noqa: F401  (and scipy's own OpenBLAS)
    from threadpoolctl import threadpool_info

    pools = [p for p in threadpool_info() if p["internal_api"] == "openblas"]
    print(json.dumps([p["num_threads"] for p in pools]))

cli._dispatch = dispatch
sys.exit(cli.main())
"""


def test_the_command_runs_blas_on_one_thread_unless_told_otherwise(tmp_path: Path) -> None:
    """(OpenBLAS takes no more threads than the CPUs the process may use: on one CPU there
    is nothing to see.)"""
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one usable CPU: OpenBLAS takes one thread whatever it is told")
    told = [({}, 1), ({"OPENBLAS_NUM_THREADS": "2"}, 2), ({"OMP_NUM_THREADS": "2"}, 2)]
    for given, threads in told:
        env = {k: v for k, v in os.environ.items() if k not in BLAS_THREADS} | given
        done = subprocess.run(
            [sys.executable, "-c", BLAS_THREADS_SEEN],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        seen = json.loads(done.stdout)
        assert seen and set(seen) == {threads}, (given, seen)


def test_a_config_error_after_a_request_to_stop_is_the_stop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A SIGTERM during Hydra's composition surfaced as Hydra's error, which the dispatcher
    printed as a bad override (exit 2): it is the stop (exit 143)."""
    from nslb_cli import cli
    from nslb_cli.common import stopping

    def cut(arguments: list[str]) -> None:
        with contextlib.suppress(stopping.Terminated):
            stopping.request(stopping.Terminated())
        raise ConfigError("overrides", "'NoneType' object has no attribute '_invalidate_flags'")

    monkeypatch.setattr(cli, "_main_of", lambda command: cut)
    try:
        with pytest.raises(SystemExit) as stopped:
            cli._dispatch(["check"])
    finally:
        stopping.forget()
    assert stopped.value.code == 143
