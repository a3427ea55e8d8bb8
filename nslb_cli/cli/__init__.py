"""The ``nslb`` command: a dispatcher over subcommands (``USAGE``), each imported when used.

The functions here are private: a public ``run`` would be shadowed by the submodule of that name.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from nslb_cli.cli import process
from nslb_cli.cli.errors import fail
from nslb_cli.common.errors import ConfigError
from nslb_cli.common.stopping import Terminated, forget, requests_unreported, stopped_by
from nslb_cli.common.stopping import check as check_stop

if TYPE_CHECKING:
    from nslb_cli.runner.engines import Engine

USAGE = """usage: nslb <command> [arguments]

commands:
  run [-m] [key=value ...]   simulate (Hydra overrides: env=…, agent=…, agent.tau=…, run.n_seeds=…);
                             a study's best.yaml stands for its overrides
  plot DIR [options]         figures and summary tables for the results under DIR (--out FOLDER)
  list                       environments and agents (plugins included) with their parameters,
                             and the experiment presets
  check agent=NAME [k=v …]   the conformance checks an agent must pass, one line each
  data prepare [env.k=v …]   MovieLens: build and cache the data, print its diagnostics
  data path                  MovieLens: print the cache folder
  warmup [--engine E]        compile every agent's kernels now, not in the first runs
  completion bash|zsh        print the shell-completion script (eval "$(nslb completion bash)")

`nslb <command> --help` describes a command; `nslb run --help` lists the config groups and
the composed config; `nslb run --cfg job` prints the config a run would use.
`nslb --version` prints the version.
"""
HELP = {
    "list": """usage: nslb list

Every environment and agent (built-in and plugins) with its paper and its parameters'
defaults, then the experiment presets. Takes no arguments.
""",
    "check": """usage: nslb check agent=NAME [agent.key=value ...] [env=NAME] [env.key=value ...]

Run the conformance checks every agent must pass (batched seeds equal seeds alone,
reproducible, beliefs that sum to one, …), one line each. Without env=NAME on two short
synthetic worlds. Exit status: 0 all pass, 1 a check fails, 2 bad input.
""",
    "warmup": """usage: nslb warmup [--engine numpy|jax]

Compile every agent's numba kernels (Gaussian and Bernoulli rewards, known model and
prior) into nslb's cache, so that no later run waits for them.
MovieLens's kernels compile on a small ratings file of its own: no release is needed.
With JAX installed (the [jax] extra), also the JAX engine's programs of the paper's
presets (run.engine=jax, default run.batch_size), into the same cache.
--engine numpy: the numba kernels alone (what `make install` runs; the README's first
run needs nothing else); --engine jax: the JAX programs alone.
""",
    "completion": """usage: nslb completion bash|zsh

Print the shell-completion script for nslb's commands, plot options and run/check
overrides. Install: add  eval "$(nslb completion bash)"  to ~/.bashrc (zsh: ~/.zshrc).
""",
}
COMMANDS = ("run", "plot", "list", "check", "data", "warmup", "completion")
HELP_FLAGS = ("-h", "--help")


def _run(arguments: Sequence[str]) -> None:
    """``nslb run``: see ``nslb_cli.cli.run``. Hydra's ``--shell-completion
    install=SHELL`` prints nslb's own script (Hydra's would call ``nslb`` without ``run``)."""
    for where, flag in enumerate(arguments[:-1]):
        value = arguments[where + 1]
        if flag in ("-sc", "--shell-completion") and value.startswith("install="):
            _main_of("completion")([value.partition("=")[2]])
            return
    _main_of("run")(arguments)


def _warmup(arguments: Sequence[str]) -> None:
    """``nslb warmup``: see ``nslb_cli.runner.warmup``."""
    import time

    from nslb_cli.runner import warmup
    from nslb_cli.runner.engines import Unwritable

    engines = _warmup_engines(arguments)
    try:
        caches = [path for engine in engines for path in engine.warm_cache(len(engines) == 1)]
    except Unwritable as err:
        fail(str(err))
    start = time.perf_counter()
    report = lambda line: print(f"  {line}", file=sys.stderr)  # noqa: E731
    done = [warmup.warm(engine, report) for engine in engines]
    for _, lost in done:
        if lost is not None:
            fail(lost)
    made = [what for what, _ in done if what is not None]
    print(
        f"nslb warmup: compiled code for {' and '.join(made)} ready in "
        f"{time.perf_counter() - start:.0f} s (cache: {', '.join(map(str, caches))})"
    )


def _warmup_engines(arguments: Sequence[str]) -> list[Engine]:
    """The engines ``nslb warmup``'s ``arguments`` ask for: every one without any, one with
    ``--engine NAME`` (or ``--engine=NAME``); anything else is one line."""
    from nslb_cli.runner.engines import ENGINES

    given = list(arguments)
    if given and given[0].startswith("--engine="):
        given = ["--engine", given[0].partition("=")[2], *given[1:]]
    if not given:
        return list(ENGINES.values())
    if len(given) == 2 and given[0] == "--engine" and given[1] in ENGINES:
        return [ENGINES[given[1]]]
    takes = " or ".join(f"--engine {name}" for name in ENGINES)
    fail(f"nslb warmup takes {takes}, not {' '.join(arguments)!r}")


def _main_of(command: str) -> Callable[[Sequence[str]], None]:
    """The ``main(arguments)`` of the subcommand's module ``nslb_cli.cli.<command>`` (``list``:
    ``listing``), imported when the command runs."""
    module = "listing" if command == "list" else command
    return lambda arguments: importlib.import_module(f"nslb_cli.cli.{module}").main(arguments)


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of the ``nslb`` console script (``argv``: default the command line).

    Ctrl-C ends it with ``nslb: interrupted`` and status 130, SIGTERM with ``nslb: terminated``
    and 143, at any moment.
    """
    if argv is None:
        process.one_blas_thread()
    forget()
    status: object = 0
    try:
        with process.signals(in_process=argv is not None), requests_unreported():
            _dispatch(list(sys.argv[1:] if argv is None else argv))
    except SystemExit as stop:
        if argv is not None:
            raise
        status = stop.code
    if argv is None:
        process.end(status)


def _dispatch(arguments: list[str]) -> None:
    """Run the subcommand of ``arguments``; end an interruption in one line."""
    if not arguments or arguments[0] in ("-h", "--help", "help"):
        print(USAGE, end="")
        return
    if arguments[0] in ("-V", "--version"):
        from importlib.metadata import version

        print(f"nslb {version('nslb-cli')}")
        return
    command, rest = arguments[0], arguments[1:]
    if command in HELP and any(a in HELP_FLAGS for a in rest):
        print(HELP[command], end="")
        return
    if command not in COMMANDS:
        fail(f"unknown command '{command}'; use one of: {', '.join(COMMANDS)} (see `nslb --help`)")
    handler = {"run": _run, "warmup": _warmup}.get(command) or _main_of(command)
    try:
        handler(rest)
        check_stop()  # a request whose exception a library swallowed: the command stops
    except SystemExit:
        raise
    except BaseException as err:
        stop = stopped_by(err)  # an error after a request to stop is that request
        if stop is None and isinstance(err, ConfigError):  # a command's bad input, in one line
            fail(str(err))
        if stop is None:
            raise
        process.stop_workers()
        terminated = isinstance(stop, Terminated)
        print(f"nslb: {'terminated' if terminated else 'interrupted'}", file=sys.stderr)
        raise SystemExit(143 if terminated else 130) from None
