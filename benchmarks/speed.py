"""``make bench``: the speed targets, each measured on this tree and on a baseline commit in
the same run (the machine is shared: only numbers taken side by side compare).

    python -m benchmarks.speed [--baseline fa9f062] [--quick] [--only REGEX] [--repeats 3]
                               [--alternate]

Prints one table — target, measured (this tree), target, baseline, baseline / measured — and
writes its rows to ``.bench/bench-<commit>.csv``. Times are wall seconds, best of
``--repeats`` runs (one run once a run exceeds 20 s); the peak RSS rows are MiB.

How the baseline runs: ``git archive <ref>`` is unpacked into ``.bench/trees/<sha>`` (with
a ``nslb_cli/conf -> ../conf`` link, the mapping ``package-dir`` does for an install) and
every workload runs in its own subprocess with ``PYTHONPATH`` set to the tree it measures,
this one included; the subprocess reports where ``nslb_cli`` was imported from, so an
editable install cannot silently win. Workloads use public entry points only (the agent and
environment registries' ``Params``, ``RunConfig``, ``simulate_seeds``, ``write_trace`` and
the ``nslb`` command as the tree's pyproject.toml declares it); one the baseline cannot run
prints "-".

MovieLens rows read ML-100K (100/100 filtering) from ``--movielens`` (default: the shared
data folder beside the repository) and cache the prepared arrays in ``.bench/cache``; they
are skipped with a note when the folder is missing. ``--quick`` skips the slow rows (make
paper, umts N=1000, MovieLens); ``nslb plot`` then reads CSVs of the three presets run with
random in place of umts (the same 1,500 files, minutes faster).
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import importlib
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomllib

DEFAULT_BASELINE = "fa9f062"  # main before the speed work
SEEDS = 100
PRESETS = ("fixed", "known", "prior")
PAPER_AGENTS_QUICK = "cd_ucb,cd_ts,exp4s,mts,random"  # the presets' agents, umts -> random
LONG = 20.0  # seconds: a run this long is not repeated (its noise is small next to it)
REPO = Path(__file__).resolve().parents[1]
MOVIELENS = REPO.parent / "shared" / "data" / "movielens" / "ml-100k"
SYNTHETIC_ENV = {"model": "prior", "horizon": 2000}  # markov dynamics (the default)
MOVIELENS_ENV = {
    "min_user_ratings": 100,  # ML-100K filtered 100/100: 364 users x 338 movies
    "min_item_ratings": 100,
    "n_arms": 20,  # K
    "rank": 20,  # d
    "horizon": 2000,  # n
}
# Runs a file as __main__ with sys.argv[1:] as its arguments; the working directory comes
# first on sys.path with -c, so it is set to a scratch folder, never a source tree.
BOOT = (
    "import runpy, sys; sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')"
)


@dataclass(frozen=True)
class Row:
    """One line of the table: a speed (seconds), memory (MiB), speed-up ("x") or ratio of
    two rows ("ratio") target; a target is an upper bound, or a lower bound for a speed-up."""

    name: str
    target: float | None
    unit: str = "s"

    def met(self, value: float) -> bool:
        assert self.target is not None
        return value >= self.target if self.unit == "x" else value <= self.target


# The field's non-stationary baselines (docs/design.md §4.8): 100 seeds x 2,000 rounds x K = 5
# of the paper's fixed scenario (Gaussian rewards) each, at most 1 s; and SMPyBandits 0.9.7
# (.bench/smpy-venv, `make smpy-venv`) on the same work where it has the algorithm, the
# policy of benchmarks/smpybandits.py's comparison, with nslb's speed-up over it (>= 50).
FIELD_AGENTS = ("sw_ucb", "d_ucb", "cusum_ucb", "glr_klucb", "d_ts", "sw_ts", "bocd_ts")
FIELD_ENV = {"dynamics": "fixed", "model": "known"}
LATENT_AR_AGENTS = ("larl", "larl_etc", "ar_ucb", "rexp3", "kalman_oracle")
LATENT_AR_ENV = {"order": 10, "horizon": 2000}  # k = 10, coefficients drawn per seed
SMPY_PAIRS = {  # nslb agent: the comparison's pair that times SMPyBandits
    "sw_ucb": "sw_ucb",
    "d_ucb": "d_ucb",
    "cusum_ucb": "cusum_ucb",
    "glr_klucb": "glr_klucb",
    "d_ts": "d_ts, Bernoulli rewards",  # its Beta posterior needs clicks
}


CHEAP_AGENTS = ("mts", "exp3s", "exp4s", "cd_ucb", "cd_ts", "sw_mucb", "sw_umucb", "oracle",
                "random")  # fmt: skip
EM_FIT = "EM fit, 10^6 logged rounds, S = K = 5, 3 restarts"
E2E_MTS = "nslb run agent=mts run.n_seeds=100, end to end"
E2E_START = "nslb run, 1 seed x 1 round (start-up), end to end"
E2E_UMTS = "nslb run umts N=100 markov/prior, end to end"
E2E_UMTS_RATIO = "umts N=100: end to end / in process"
E2E_SWEEP = "nslb run -m cd_ucb tau=2..200 (100 jobs, 10 seeds x 500), end to end"
ENGINES = {  # row: the run's overrides, each with run.engine=numpy and run.engine=jax
    "mts 1,000 seeds": ("agent=mts", "run.n_seeds=1000", "run.batch_size=1000"),
    "umts N=100 markov/prior 100 seeds": ("agent=umts", "env.model=prior", "run.n_seeds=100"),
    "-m cd_ucb tau=10..200 (20 jobs) x 100 seeds": (
        "-m",
        "agent=cd_ucb",
        "agent.tau=range(10,210,10)",
        "run.n_seeds=100",
        "run.batch_size=2000",
        "run.format=parquet",
        "run.every=10",
    ),  # fmt: skip  # on the JAX engine: one program, the 20 jobs' lanes in one batch
}


def engine_row(run: str, engine: str) -> str:
    return f"nslb run {run}, run.engine={engine}, end to end"


def engine_ratio(run: str) -> str:
    return f"{run}: jax / numpy engine, end to end"


STORAGE = {  # row: the run's storage overrides (mts over 1,000 seeds x 2,000 rounds)
    "nslb run agent=mts run.n_seeds=1000, CSVs, end to end": (),
    "nslb run agent=mts run.n_seeds=1000, Parquet, end to end": ("run.format=parquet",),
    "nslb run agent=mts run.n_seeds=1000, Parquet run.every=10, end to end": (
        "run.format=parquet",
        "run.every=10",
    ),
}


def cheap_row(agent: str) -> str:
    return f"{agent}, simulate 100 seeds x 2000 rounds"


def field_row(agent: str) -> str:
    return f"{agent}, fixed scenario"


def latent_ar_row(agent: str) -> str:
    return f"{agent}, latent AR k=10, 100 seeds x 2000 rounds"


def smpy_row(agent: str) -> str:
    return f"SMPyBandits {SMPY_PAIRS[agent]}, same work"


def speedup_row(agent: str) -> str:
    return f"SMPyBandits / nslb, {SMPY_PAIRS[agent]}"


ROWS = (
    Row("make paper: simulate fixed, known, prior", 6),
    Row("umts N=10, synthetic", None),
    Row("umts N=100, synthetic", 4),
    Row("umts N=1000, synthetic", 25),
    Row("write CSVs, 100 seeds x 2000 rounds", 0.1),
    Row("nslb plot, 1,500 CSVs of make paper", 3),
    Row("MovieLens umts N=100", 30),
    Row("MovieLens cd_linucb", 5),
    Row("MovieLens cd_lints", 5),
    Row("MovieLens mts", 3),
    Row("MovieLens preset paper/movielens", 60),
    *(Row(f"peak RSS paper/{p}", 2048, "MiB") for p in (*PRESETS, "movielens")),
    Row(E2E_START, 0.5),
    Row(E2E_MTS, 1.0),
    Row(E2E_UMTS, None),
    Row(E2E_UMTS_RATIO, 1.2, "ratio"),
    Row(E2E_SWEEP, 15),
    *(Row(row, None) for row in STORAGE),
    *(
        row
        for run in ENGINES
        for row in (
            Row(engine_row(run, "numpy"), None),
            Row(engine_row(run, "jax"), None),
            Row(engine_ratio(run), 1.0, "ratio"),
        )  # fmt: skip
    ),
    Row(EM_FIT, 10),
    *(Row(cheap_row(agent), 0.1) for agent in CHEAP_AGENTS),
    *(Row(field_row(agent), 1) for agent in FIELD_AGENTS),
    *(Row(latent_ar_row(agent), 1) for agent in LATENT_AR_AGENTS),
    *(
        row
        for agent in SMPY_PAIRS
        for row in (Row(smpy_row(agent), None), Row(speedup_row(agent), 50, "x"))
    ),
)


class Skip(Exception):
    """A workload that cannot run here (no data, or a tree without what it needs)."""


@dataclass
class Context:
    """What a workload may use in its worker process."""

    scratch: Path  # this tree's scratch folder (the working directory)
    cache: Path  # env.cache_dir for MovieLens
    movielens: Path
    repeats: int
    cli: tuple[str, ...]  # the command that runs `nslb` of this tree
    notes: list[str] = field(default_factory=list)


Values = dict[str, float]


@dataclass(frozen=True)
class Workload:
    key: str
    run: Callable[[Context], Values]
    slow: bool = False  # skipped by --quick


# ---------------------------------------------------------------- helpers (worker side)


def best_of(task: Callable[[int], object], repeats: int) -> float:
    """Least wall time of ``task(i)`` over up to ``repeats`` runs, stopping after a long one."""
    times: list[float] = []
    for i in range(repeats):
        start = time.perf_counter()
        task(i)
        times.append(time.perf_counter() - start)
        if times[-1] > LONG:
            break
    return min(times)


def module(*names: str) -> Any:
    """The first of ``names`` that the tree on ``PYTHONPATH`` has (trees before and after
    nslb_cli's subpackages name one module differently). Looked up as files of the tree:
    an editable install would otherwise supply a module the tree lacks."""
    root = Path(importlib.import_module("nslb_cli").__file__).parents[1]
    for name in names:
        path = root.joinpath(*name.split("."))
        if path.with_suffix(".py").is_file() or (path / "__init__.py").is_file():
            return importlib.import_module(name)
    raise Skip(f"none of {', '.join(names)}")


def params(kind: str, name: str, **values: Any) -> Any:
    """The ``Params`` of agent or env ``name`` with ``values``; Skip if the tree lacks them."""
    if kind == "agent":
        from nslb_cli.agents import AGENTS as registry
    else:
        from nslb_cli.envs import ENVIRONMENTS as registry
    if name not in registry:
        raise Skip(f"no {kind} {name!r}")
    schema = registry[name].Params
    unknown = set(values) - {f.name for f in dataclasses.fields(schema)}
    if unknown:
        raise Skip(f"{kind} {name!r} has no {', '.join(sorted(unknown))}")
    return schema(**values)


def simulate(env: Any, agent: Any, n_seeds: int = SEEDS) -> Any:
    """``simulate_seeds`` of a one-batch RunConfig, seeds 0 … n_seeds - 1."""
    import numpy as np

    compose = module("nslb_cli.runner.config", "nslb_cli.runner.compose", "nslb_cli.common")
    simulate_seeds = module("nslb_cli.runner.job", "nslb_cli.job").simulate_seeds
    RunConfig, RunSettings = compose.RunConfig, compose.RunSettings
    settings = RunSettings(n_seeds=n_seeds, batch_size=n_seeds, progress=False)
    return simulate_seeds(RunConfig("bench", env, agent, settings), np.arange(n_seeds))


def nslb(ctx: Context, *args: str) -> tuple[float, float]:
    """Run ``nslb args`` of this tree; return its wall seconds and peak RSS (MiB) over the
    process and the children it waited for (a launcher's workers included)."""
    ((seconds, rss),) = nslb_together(ctx, [args])
    return seconds, rss


def nslb_together(ctx: Context, commands: Sequence[Sequence[str]]) -> list[tuple[float, float]]:
    """Start ``nslb args`` of this tree for every ``args`` of ``commands`` at once and wait
    for all; return each one's wall seconds (from the common start to when it was reaped,
    in order: the last is the time of the whole) and peak RSS (MiB). Each writes its own
    log, ``nslb-<k>.log``."""
    start = time.perf_counter()
    running: list[tuple[subprocess.Popen[bytes], Path, Sequence[str]]] = []
    for k, args in enumerate(commands):
        log = ctx.scratch / f"nslb-{k}.log"
        with log.open("ab") as out:
            out.write(f"\n$ nslb {' '.join(args)}\n".encode())
            out.flush()
            process = subprocess.Popen([*ctx.cli, *args], stdout=out, stderr=out)
            running.append((process, log, args))
    finished = []
    for process, log, args in running:
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        finished.append((time.perf_counter() - start, usage.ru_maxrss / 1024))  # Linux: KiB
        if process.returncode != 0:
            for other, _, _ in running:
                if other.returncode is None:
                    other.kill()
                    other.wait()
            tail = log.read_text(errors="replace").strip().splitlines()[-1:]
            raise RuntimeError(f"nslb {args[0]} failed: {' '.join(tail)}")
    return finished


def fresh(folder: Path) -> Path:
    shutil.rmtree(folder, ignore_errors=True)
    return folder


def prepare_movielens(env: Any) -> None:
    """Build one MovieLens world: prepares and caches the data, so it is not timed."""
    import numpy as np

    from nslb_cli.envs import ENVIRONMENTS

    ENVIRONMENTS["movielens"].build(env, np.arange(1))


def movielens_env(ctx: Context) -> dict[str, Any]:
    if not ctx.movielens.is_dir():
        raise Skip(f"no ML-100K folder at {ctx.movielens} (--movielens DIR)")
    return {"data_dir": str(ctx.movielens), "cache_dir": str(ctx.cache), **MOVIELENS_ENV}


# ---------------------------------------------------------------- workloads


def paper(ctx: Context) -> Values:
    """make paper's simulation: the three synthetic presets at once, CSVs written; after an
    untimed tiny run of each (2 seeds x 20 rounds), so that no tree's time includes compiling
    its kernels (the run is long enough to be timed once)."""
    warm = fresh(ctx.scratch / "paper-warm-up")
    for p in PRESETS:
        nslb(ctx, "run", f"experiment=paper/{p}", "env.horizon=20", "run.n_seeds=2",
             f"hydra.sweep.dir={warm / p}")  # fmt: skip
    out = fresh(ctx.scratch / "paper")
    runs = nslb_together(
        ctx, [("run", f"experiment=paper/{p}", f"hydra.sweep.dir={out / p}") for p in PRESETS]
    )
    (ctx.scratch / "paper.done").touch()
    values: Values = {f"peak RSS paper/{p}": rss for p, (_, rss) in zip(PRESETS, runs, strict=True)}
    return {"make paper: simulate fixed, known, prior": max(s for s, _ in runs), **values}


def synthetic_umts(particles: int) -> Callable[[Context], Values]:
    def run(ctx: Context) -> Values:
        env = params("env", "synthetic", **SYNTHETIC_ENV)
        agent = params("agent", "umts", num_particles=particles)
        tiny = params("env", "synthetic", **{**SYNTHETIC_ENV, "horizon": 10})
        simulate(tiny, agent, n_seeds=2)  # untimed: the kernels loaded (or compiled) first
        seconds = best_of(lambda _: simulate(env, agent), ctx.repeats)
        return {f"umts N={particles}, synthetic": seconds}

    return run


def write_csvs(ctx: Context) -> Values:
    """write_trace of mTS's trace (it has a belief) on the synthetic env, 100 x 2000."""
    write_trace = module("nslb_cli.store.results", "nslb_cli.results").write_trace
    keyed = "key" in inspect.signature(write_trace).parameters  # seeds record their config
    key = ("0" * 16,) if keyed else ()
    trace = simulate(params("env", "synthetic", **SYNTHETIC_ENV), params("agent", "mts"))
    folders = [fresh(ctx.scratch / f"write/{i}") for i in range(ctx.repeats)]
    seconds = best_of(lambda i: write_trace(folders[i], trace, *key), ctx.repeats)
    return {"write CSVs, 100 seeds x 2000 rounds": seconds}


def plot(ctx: Context) -> Values:
    """`nslb plot` of make paper's results (or, with --quick, of a stand-in run)."""
    results = ctx.scratch / "paper"
    if not (ctx.scratch / "paper.done").exists():
        fresh(results)
        nslb_together(
            ctx,
            [
                ("run", f"experiment=paper/{p}", f"agent={PAPER_AGENTS_QUICK}",
                 f"hydra.sweep.dir={results / p}")
                for p in PRESETS
            ],
        )  # fmt: skip
        ctx.notes.append("nslb plot read the presets run with random in place of umts")
    n_files = sum(1 for _ in results.rglob("seed=*.csv"))
    if n_files != len(PRESETS) * 5 * SEEDS:
        ctx.notes.append(f"nslb plot read {n_files} CSVs")
    out = ctx.scratch / "figures"
    seconds = best_of(
        lambda _: nslb(ctx, "plot", str(results), "--out", str(fresh(out))), ctx.repeats
    )
    return {"nslb plot, 1,500 CSVs of make paper": seconds}


def movielens_agent(row: str, agent: str, **agent_values: Any) -> Callable[[Context], Values]:
    def run(ctx: Context) -> Values:
        env = params("env", "movielens", **movielens_env(ctx))
        config = params("agent", agent, **agent_values)
        prepare_movielens(env)
        seconds = best_of(lambda _: simulate(env, config), ctx.repeats)
        return {row: seconds}

    return run


def movielens_preset(ctx: Context) -> Values:
    """nslb run experiment=paper/movielens (5 agents, one after another)."""
    env = [f"env.{key}={value}" for key, value in movielens_env(ctx).items()]
    nslb(ctx, "data", "prepare", *env)  # not timed
    out = fresh(ctx.scratch / "movielens")
    seconds, rss = nslb(ctx, "run", "experiment=paper/movielens", *env, f"hydra.sweep.dir={out}")
    return {"MovieLens preset paper/movielens": seconds, "peak RSS paper/movielens": rss}


def end_to_end(ctx: Context) -> Values:
    """What a user types, timed as a fresh process from start to exit (results written):
    start-up, mTS over 100 seeds, umTS (N=100, markov/prior) and a sweep of 100 small jobs."""
    out = ctx.scratch / "e2e"
    commands = {
        E2E_START: ("agent=mts", "run.n_seeds=1", "env.horizon=1"),
        E2E_MTS: ("agent=mts", "run.n_seeds=100"),
        E2E_UMTS: ("agent=umts", "agent.num_particles=100", "env.model=prior", "run.n_seeds=100"),
    }
    values = {
        row: best_of(
            lambda i, k=k, args=args: nslb(
                ctx, "run", *args, f"hydra.run.dir={fresh(out / f'{k}-{i}')}"
            ),
            ctx.repeats,
        )
        for k, (row, args) in enumerate(commands.items())
    }
    sweep = ("-m", "agent=cd_ucb", "agent.tau=range(2,202,2)", "env.horizon=500", "run.n_seeds=10")
    values[E2E_SWEEP] = best_of(
        lambda i: nslb(ctx, "run", *sweep, f"hydra.sweep.dir={fresh(out / f'sweep-{i}')}"), 1
    )
    return values


def storage(ctx: Context) -> Values:
    """mTS over 1,000 seeds end to end, its results written as CSVs, as one Parquet file,
    and as one Parquet file of every 10th round (a tree without ``run.format``: the CSV row
    only, and a note)."""
    out = ctx.scratch / "storage"
    values: Values = {}
    for k, (row, extra) in enumerate(STORAGE.items()):
        args = ("run", "agent=mts", "run.n_seeds=1000", "run.progress=false", *extra)
        try:
            values[row] = best_of(
                lambda i, k=k, args=args: nslb(
                    ctx, *args, f"hydra.run.dir={fresh(out / f'{k}-{i}')}"
                ),
                ctx.repeats,
            )
        except RuntimeError as err:
            ctx.notes.append(f"{row}: {err}")
    return values


def folders(folder: Path) -> tuple[str, str]:
    """A fresh ``folder`` for a run's results, or a sweep's."""
    return f"hydra.run.dir={fresh(folder)}", f"hydra.sweep.dir={folder}"


def engines(ctx: Context) -> Values:
    """The JAX engine against the default engine on this CPU, end to end, each run's program
    compiled by a first run that is not timed (a tree without ``run.engine``: a note)."""
    out = ctx.scratch / "engines"
    values: Values = {}
    for k, (run, args) in enumerate(ENGINES.items()):
        try:
            for engine in ("numpy", "jax"):
                command = ("run", *args, f"run.engine={engine}", "run.progress=false")
                nslb(ctx, *command, *folders(out / f"{k}-{engine}-warm"))
                values[engine_row(run, engine)] = best_of(
                    lambda i, c=command, name=f"{k}-{engine}": nslb(
                        ctx, *c, *folders(out / f"{name}-{i}")
                    ),
                    ctx.repeats,
                )
        except RuntimeError as err:
            ctx.notes.append(f"{run}: {err}")
            continue
        values[engine_ratio(run)] = (
            values[engine_row(run, "jax")] / values[engine_row(run, "numpy")]
        )
    return values


def cheap_agents(ctx: Context) -> Values:
    """The paper's cheap agents and the references, in process (the world built once)."""
    env = params("env", "synthetic")
    return {
        cheap_row(agent): best_of(lambda _, a=agent: simulate(env, params("agent", a)), ctx.repeats)
        for agent in CHEAP_AGENTS
    }


def field_agent(agent: str) -> Callable[[Context], Values]:
    """One of the field's baselines on the fixed scenario, 100 seeds x 2,000 rounds, K = 5."""

    def run(ctx: Context) -> Values:
        env = params("env", "synthetic", **FIELD_ENV)
        seconds = best_of(lambda _: simulate(env, params("agent", agent)), ctx.repeats)
        return {field_row(agent): seconds}

    return run


def latent_ar_agent(agent: str) -> Callable[[Context], Values]:
    """An agent of the latent-AR family on env=latent_ar (k = 10), 100 seeds x 2,000 rounds."""

    def run(ctx: Context) -> Values:
        env = params("env", "latent_ar", **LATENT_AR_ENV)
        seconds = best_of(lambda _: simulate(env, params("agent", agent)), ctx.repeats)
        return {latent_ar_row(agent): seconds}

    return run


def em_fit(ctx: Context) -> Values:
    """Baum-Welch (``nslb_cli.learning``) on 10^6 rounds logged uniformly from the paper's
    Markov scenario (S = K = 5, switch probability 0.005, sigma 0.5), in 10^4 sequences of
    100; after an untimed fit of 100 rounds (its kernel loaded, or compiled)."""
    import numpy as np

    learning = module("nslb_cli.learning")
    rng = np.random.default_rng(0)
    S = K = 5
    move = 0.005 / (S - 1)
    P = np.full((S, S), move) + np.eye(S) * (1.0 - 0.005 - move)
    means = rng.uniform(size=(S, K))
    M, T = 10_000, 100
    states = np.empty((M, T), dtype=np.int64)
    states[:, 0] = rng.integers(S, size=M)
    for t in range(1, T):
        cumulative = np.cumsum(P[states[:, t - 1]], axis=1)
        states[:, t] = (rng.random(M)[:, None] > cumulative).sum(axis=1)
    arms = rng.integers(K, size=(M, T))
    rewards = means[states, arms] + 0.5 * rng.standard_normal((M, T))
    logs = learning.Logs(arms, rewards, np.full(M, T))
    learning.fit(learning.Logs(arms[:1], rewards[:1], np.array([T])), S, K, restarts=1)
    seconds = best_of(lambda _: learning.fit(logs, S, K, restarts=3), ctx.repeats)
    return {EM_FIT: seconds}


def smpybandits(ctx: Context) -> Values:
    """SMPyBandits' time on the work of each field row it has the algorithm of (the pairs of
    benchmarks/smpybandits.py, one run: seconds per policy), and nslb's on the same pair
    (best of the repeats): their ratio. Measured with this tree only."""
    if not (REPO / "benchmarks" / "smpybandits.py").is_file():
        raise Skip("no benchmarks/smpybandits.py")
    tree = Path(importlib.import_module("nslb_cli").__file__).parents[1].resolve()
    if tree != REPO.resolve():
        raise Skip("SMPyBandits is timed with this tree only")
    sys.path.insert(0, str(REPO))
    compare = importlib.import_module("benchmarks.smpybandits")
    if not compare.SIDE_PYTHON.exists():
        raise Skip(f"no SMPyBandits environment at {compare.SIDE_PYTHON}: run `make smpy-venv`")
    import numpy as np

    pairs = {pair.name: pair for pair in compare.PAIRS}
    seeds = np.arange(SEEDS)
    values: Values = {}
    for agent, name in SMPY_PAIRS.items():
        pair = pairs[name]
        world, env = compare.worlds(pair.env, seeds)
        # the simulation's own seconds (run_nslb first loads the compiled kernels, untimed)
        ours = min(compare.run_nslb(pair, world, env, seeds)[1] for _ in range(ctx.repeats))
        folder = fresh(ctx.scratch / "smpybandits")
        folder.mkdir(parents=True)
        _, theirs, _ = compare.run_smpy(pair, world, compare.SIDE_PYTHON, folder)
        values[smpy_row(agent)] = theirs
        values[speedup_row(agent)] = theirs / ours
    return values


WORKLOADS = (
    Workload("paper", paper, slow=True),
    Workload("umts-10", synthetic_umts(10)),
    Workload("umts-100", synthetic_umts(100)),
    Workload("umts-1000", synthetic_umts(1000), slow=True),
    Workload("write", write_csvs),
    Workload("plot", plot),
    *(
        Workload(f"movielens-{agent}", movielens_agent(row, agent, **values), slow=True)
        for row, agent, values in (
            ("MovieLens umts N=100", "umts", {"num_particles": 100}),
            ("MovieLens cd_linucb", "cd_linucb", {}),
            ("MovieLens cd_lints", "cd_lints", {}),
            ("MovieLens mts", "mts", {}),
        )
    ),
    Workload("movielens-preset", movielens_preset, slow=True),
    Workload("end-to-end", end_to_end),
    Workload("storage", storage, slow=True),
    Workload("engines", engines, slow=True),
    Workload("em-fit", em_fit, slow=True),
    Workload("cheap", cheap_agents),
    *(Workload(f"field-{agent}", field_agent(agent)) for agent in FIELD_AGENTS),
    *(Workload(f"latent-ar-{agent}", latent_ar_agent(agent)) for agent in LATENT_AR_AGENTS),
    Workload("smpybandits", smpybandits, slow=True),
)


# ---------------------------------------------------------------- worker process


def cli_command(tree: Path) -> tuple[str, ...]:
    """How to run this tree's ``nslb``: its entry point as pyproject.toml declares it."""
    found = re.search(r'^nslb\s*=\s*"([\w.]+):(\w+)"', (tree / "pyproject.toml").read_text(), re.M)
    if found is None:
        raise Skip("no nslb entry point in pyproject.toml")
    module, function = found.groups()
    code = f"import sys; from {module} import {function} as m; sys.argv[0] = 'nslb'; sys.exit(m())"
    return (sys.executable, "-c", code)


def imported_from(tree: Path) -> None:
    """Fail unless ``nslb_cli`` and its configs are this tree's (PYTHONPATH must win)."""
    import nslb_cli.conf

    import nslb_cli

    for module in (nslb_cli, nslb_cli.conf):
        where = Path(next(iter(module.__path__))).resolve()
        if not where.is_relative_to(tree.resolve()):
            raise RuntimeError(f"{module.__name__} imported from {where}, not from {tree}")


def worker(args: argparse.Namespace) -> None:
    """Run one workload against the tree on PYTHONPATH; write its values as JSON."""
    ctx = Context(
        scratch=Path.cwd(),
        cache=args.cache,
        movielens=args.movielens,
        repeats=args.repeats,
        cli=(),
    )
    workload = next(w for w in WORKLOADS if w.key == args.worker)
    try:
        imported_from(args.tree)
        ctx.cli = cli_command(args.tree)
        result: dict[str, Any] = {"values": workload.run(ctx)}
    except Skip as err:
        result = {"skip": str(err)}
    except Exception as err:  # reported in the table's notes, not raised
        traceback.print_exc()
        result = {"error": f"{type(err).__name__}: {str(err).strip().splitlines()[-1:]}"}
    result["notes"] = ctx.notes
    args.result.write_text(json.dumps(result))


# ---------------------------------------------------------------- parent process


def git(*args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(REPO), *args], check=True, capture_output=True, text=True
    ).stdout.strip()


def commit_label() -> str:
    """This tree's short commit, with ``-dirty`` when tracked files differ from it."""
    dirty = subprocess.run(["git", "-C", str(REPO), "diff", "--quiet", "HEAD"]).returncode != 0
    return git("rev-parse", "--short", "HEAD") + ("-dirty" if dirty else "")


def export_tree(ref: str, trees: Path) -> tuple[Path, str]:
    """Unpack commit ``ref`` into ``trees/<sha>`` (once) and return it with its short sha."""
    sha = git("rev-parse", "--verify", f"{ref}^{{commit}}")
    tree = trees / sha
    if not tree.is_dir():
        partial = fresh(trees / f".{sha}.partial")
        partial.mkdir(parents=True)
        archive = subprocess.run(
            ["git", "-C", str(REPO), "archive", "--format=tar", sha],
            check=True,
            capture_output=True,
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(partial)], input=archive, check=True)
        if (partial / "conf").is_dir() and not (partial / "nslb_cli/conf").exists():
            (partial / "nslb_cli/conf").symlink_to("../conf")
        partial.rename(tree)
    return tree, sha[:7]


def tree_environment(tree: Path, folder: Path) -> dict[str, str]:
    """What a process needs to run ``tree`` as installed: ``PYTHONPATH`` with the tree and a
    ``nslb_cli`` distribution of its own pyproject.toml's entry points (in ``folder``).

    Agents and environments are entry points, read from the installed package's metadata:
    without this, a tree would find the modules the editable install declares, which another
    layout of ``nslb_cli`` may not have. The first distribution of a name on ``sys.path``
    wins, so the tree's shadows the installed one.
    """
    project = tomllib.loads((tree / "pyproject.toml").read_text())["project"]
    info = folder / f"nslb_cli-{project['version']}.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n"
    )
    groups = {"console_scripts": project.get("scripts", {}), **project.get("entry-points", {})}
    lines = []
    for group, points in groups.items():
        lines += [f"[{group}]", *(f"{name} = {value}" for name, value in points.items()), ""]
    (info / "entry_points.txt").write_text("\n".join(lines))
    return {"PYTHONPATH": os.pathsep.join([str(tree), str(folder)])}


def measure(
    workload: Workload, tree: Path, scratch: Path, args: argparse.Namespace, cache: Path
) -> dict[str, Any]:
    """Run ``workload`` in a subprocess against ``tree``; its JSON result."""
    scratch.mkdir(parents=True, exist_ok=True)
    result = scratch / f"{workload.key}.json"
    result.unlink(missing_ok=True)
    command = [
        *(sys.executable, "-c", BOOT, str(Path(__file__).resolve())),
        *("--worker", workload.key, "--tree", str(tree), "--result", str(result)),
        *("--cache", str(cache), "--movielens", str(args.movielens)),
        *("--repeats", str(args.repeats)),
    ]
    env = {**os.environ, **tree_environment(tree, scratch / "metadata")}
    with (scratch / f"{workload.key}.log").open("wb") as log:
        subprocess.run(command, cwd=scratch, env=env, stdout=log, stderr=subprocess.STDOUT)
    if not result.exists():
        return {"error": f"worker died; see {scratch / workload.key}.log", "notes": []}
    return json.loads(result.read_text())


def number(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    if unit == "x":
        return f"{value:.0f}x"
    if unit == "ratio":
        return f"{value:.2f}"
    if unit == "MiB" or value >= 100:
        return f"{value:.0f}"
    return f"{value:.1f}" if value >= 10 else f"{value:.2f}"


def table(rows: Sequence[Row], current: Values, baseline: Values, base: str) -> list[list[str]]:
    lines = [["speed target", "measured", "target", f"baseline {base}", "ratio"]]
    for row in rows:
        now, old = current.get(row.name), baseline.get(row.name)
        ratio = f"{old / now:.1f}x" if now and old and row.unit not in ("x", "ratio") else "-"
        unit = " (MiB)" if row.unit == "MiB" else ""
        lines.append(
            [
                row.name + unit,
                number(now, row.unit),
                number(row.target, row.unit),
                number(old, row.unit),
                ratio,
            ]
        )
    return lines


def print_table(lines: list[list[str]]) -> None:
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    for n, line in enumerate(lines):
        cells = [line[0].ljust(widths[0])] + [
            c.rjust(w) for c, w in zip(line[1:], widths[1:], strict=True)
        ]
        print("  ".join(cells))
        if n == 0:
            print("  ".join("-" * w for w in widths))


def write_csv(
    path: Path, current: Values, baseline: Values, rows: Sequence[Row], info: dict[str, str]
) -> None:
    """The table's rows as CSV, numbers unrounded, with the commits compared. Rows of an
    earlier run in ``path`` (same commit) that this run did not measure are kept, so a
    ``--quick`` run and an ``--only`` run add up; the table's order is kept too."""
    header = ["row", "unit", "measured", "target", "baseline", "ratio", *info]
    lines: dict[str, list[Any]] = {}
    if path.exists():
        with path.open(newline="") as handle:
            earlier = list(csv.reader(handle))
        if earlier and earlier[0] == header:
            lines = {line[0]: line for line in earlier[1:]}
    for row in rows:
        now, old = current.get(row.name), baseline.get(row.name)
        cells = [now, row.target, old, old / now if now and old else None]
        lines[row.name] = [row.name, row.unit, *("" if c is None else c for c in cells)]
        lines[row.name] += info.values()
    order = {row.name: i for i, row in enumerate(ROWS)}
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as handle:
        out = csv.writer(handle)
        out.writerow(header)
        out.writerows(sorted(lines.values(), key=lambda line: order.get(line[0], len(order))))


def selected(args: argparse.Namespace) -> list[Workload]:
    chosen = [w for w in WORKLOADS if not (args.quick and w.slow)]
    if args.only:
        chosen = [w for w in chosen if re.search(args.only, w.key)]
    return chosen


def run(args: argparse.Namespace) -> int:
    out: Path = args.out
    current_label = commit_label()
    baseline_tree, baseline_label = export_tree(args.baseline, out / "trees")
    trees = {"current": (REPO, current_label), "baseline": (baseline_tree, baseline_label)}
    values: dict[str, Values] = {"current": {}, "baseline": {}}
    notes: list[str] = []
    failed = False
    workloads = selected(args)
    scratch_root = fresh(out / "run")
    # --alternate: each of the best-of runs a pass of its own, the trees taking turns
    passes, each = (
        (args.repeats, argparse.Namespace(**{**vars(args), "repeats": 1}))
        if (args.alternate)
        else (1, args)
    )
    try:
        for n, workload in enumerate(workloads * passes, 1):
            for side, (tree, label) in trees.items():  # side by side: same load on the machine
                scratch = scratch_root / side
                result = measure(workload, tree, scratch, each, out / "cache" / label)
                for key, value in result.get("values", {}).items():
                    values[side][key] = min(value, values[side].get(key, value))
                notes += [f"{side}: {note}" for note in result["notes"]]
                problem = result.get("skip") or result.get("error")
                if problem:
                    notes.append(f"{side} {label}, {workload.key}: {problem}")
                    failed |= side == "current" and "error" in result
                got = ", ".join(f"{k} {v:.2f}" for k, v in result.get("values", {}).items())
                done = f"{n}/{len(workloads) * passes}"
                print(f"[{done}] {side} {label}: {got or problem}", file=sys.stderr)
    finally:
        if not args.keep:
            shutil.rmtree(scratch_root, ignore_errors=True)
    for side in values.values():
        derived(side)
    shown = [r for r in ROWS if r.name in values["current"] or r.name in values["baseline"]]
    print(
        f"\nnslb bench: {current_label} vs baseline {baseline_label}; {SEEDS} seeds x 2000 "
        "rounds; synthetic: markov, prior model; MovieLens: ML-100K, K=20, d=20"
    )
    print(f"seconds (best of {args.repeats}) except peak RSS; ratio = baseline / measured\n")
    print_table(table(shown, values["current"], values["baseline"], baseline_label))
    met = [r for r in shown if r.target and r.name in values["current"]]
    ok = sum(r.met(values["current"][r.name]) for r in met)
    print(f"\ntargets met: {ok} of {len(met)}")
    skipped = [w.key for w in WORKLOADS if w not in workloads]
    if skipped:
        print(f"not run: {', '.join(skipped)}")
    for note in dict.fromkeys(notes):
        print(f"note: {note}")
    path = out / f"bench-{current_label}.csv"
    info = {"commit": current_label, "baseline_commit": baseline_label, "quick": str(args.quick)}
    write_csv(path, values["current"], values["baseline"], shown, info)
    print(f"written: {path}")
    return 1 if failed else 0


def derived(values: Values) -> None:
    """Add the rows computed from others: umTS end to end over its in-process time."""
    e2e, inside = values.get(E2E_UMTS), values.get("umts N=100, synthetic")
    if e2e and inside:
        values[E2E_UMTS_RATIO] = e2e / inside


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="nslb-bench", description=__doc__.splitlines()[0])
    p.add_argument("--baseline", default=DEFAULT_BASELINE, help="git ref to compare against")
    p.add_argument("--quick", action="store_true", help="skip the slow rows")
    p.add_argument(
        "--only", metavar="REGEX", help=f"workloads: {' '.join(w.key for w in WORKLOADS)}"
    )
    p.add_argument("--repeats", type=int, default=3, help="best of this many runs")
    p.add_argument(
        "--alternate",
        action="store_true",
        help="run each repeat as a pass of its own, the two trees taking turns (a machine "
        "whose load drifts then weighs on both alike)",
    )
    p.add_argument("--movielens", type=Path, default=MOVIELENS, help="an ML-100K folder")
    p.add_argument("--out", type=Path, default=REPO / ".bench", help="trees, cache, CSVs")
    p.add_argument("--keep", action="store_true", help="keep .bench/run (results, logs)")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--tree", type=Path, help=argparse.SUPPRESS)
    p.add_argument("--result", type=Path, help=argparse.SUPPRESS)
    p.add_argument("--cache", type=Path, help=argparse.SUPPRESS)
    return p


def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    if args.worker:
        worker(args)
    else:
        raise SystemExit(run(args))


if __name__ == "__main__":
    main()
