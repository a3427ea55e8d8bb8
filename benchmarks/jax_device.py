"""The JAX engine's rows on an accelerator (issue: a hundred thousand seeds in a blink).

    python benchmarks/jax_device.py OUT_FOLDER

Run from outside the repository with nslb installed (``pip install '.[jax]'`` and the
matching ``jax[cudaNN]``). Prints and writes ``OUT_FOLDER/jax_device.md``:

* the simulation alone (the compiled program on the device, compilation cached: the
  second call is timed): mTS, 100,000 seeds x 2,000 rounds; umTS (N = 100, markov/prior),
  10,000 seeds;
* end to end with the ``nslb`` command: the three paper presets at once (as ``make paper``
  runs them) with each engine (their second run: the programs cached), mTS over 100,000
  seeds as Parquet keeping every 10th round, and a 100-value sweep of CD-UCB's window over
  1,000 seeds (one program, 100 jobs' lanes a batch).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import jax
import numpy as np

from nslb_cli.agents.mts import MTSParams
from nslb_cli.agents.umts.agent import UMTSParams
from nslb_cli.envs.synthetic import SyntheticParams
from nslb_cli.jax_engine.engine import agent_of, world_of
from nslb_cli.jax_engine.scan import run_compiled

SCALE = float(os.environ.get("NSLB_DEVICE_SCALE", "1"))  # < 1: a dry run on a CPU
NSLB = Path(sys.executable).with_name("nslb")  # this interpreter's, on PATH or not


def simulation(label: str, env: SyntheticParams, agent: object, n_seeds: int) -> str:
    """Seconds of the device program for ``n_seeds`` seeds, first call and second call."""
    world = world_of(env)
    n_seeds = max(2, int(n_seeds * SCALE))
    seeds = np.arange(n_seeds)
    times = []
    with jax.enable_x64(True):
        for _ in range(2):
            start = time.perf_counter()
            columns, _summary = run_compiled(world, agent_of(agent, world), seeds)
            jax.block_until_ready(columns)
            times.append(time.perf_counter() - start)
        regret = np.asarray((columns["optimal_reward"] - columns["expected_reward"]).sum(axis=1))
    rate = n_seeds * env.horizon / times[1] / 1e6
    return (f"| {label} | {times[0]:.2f} | {times[1]:.3f} | {rate:,.0f} M seed-rounds/s | "
            f"{regret.mean():.2f} ± {regret.std(ddof=1) / np.sqrt(n_seeds):.2f} |")  # fmt: skip


def command(label: str, *runs: list[str]) -> str:
    """Wall seconds of ``nslb`` commands run at once, as ``make paper`` runs its presets
    (twice: the second timed, in a fresh output folder)."""
    times = []
    for _ in range(2):
        out = tempfile.mkdtemp()
        start = time.perf_counter()
        started = [
            subprocess.Popen(
                [
                    str(NSLB) if NSLB.exists() else "nslb",
                    "run",
                    *args,
                    f"hydra.sweep.dir={out}/s{i}",
                    f"hydra.run.dir={out}/r{i}",
                    "run.progress=false",
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )  # fmt: skip
            for i, args in enumerate(runs)
        ]
        failed = [p.communicate()[1] for p in started if p.wait() != 0]
        if failed:
            return f"| {label} | failed: {failed[0].strip().splitlines()[-1:]} | | | |"
        times.append(time.perf_counter() - start)
    return f"| {label} | {times[0]:.1f} | {times[1]:.1f} | | |"


PRESETS = ("fixed", "known", "prior")


def main(out: Path) -> None:
    rows = [
        f"device: {jax.devices()[0].device_kind}, JAX {jax.__version__}, {os.cpu_count()} CPUs",
        "",
        "| row | first call s | second call s | rate | final regret (mean ± SE) |",
        "|---|---|---|---|---|",
    ]
    known, prior = SyntheticParams(), SyntheticParams(model="prior")
    many = f"run.n_seeds={int(100_000 * SCALE)}"
    windows = f"run.n_seeds={max(2, int(1_000 * SCALE))}"
    for row in (
        lambda: simulation("mts, 100,000 seeds x 2,000 (simulation)", known, MTSParams(), 100_000),
        lambda: simulation(
            "umts N=100 markov/prior, 10,000 seeds (simulation)", prior, UMTSParams(), 10_000
        ),
        lambda: command(
            "3 paper presets at once, run.engine=jax, end to end",
            *[["-m", f"experiment=paper/{p}", "run.engine=jax"] for p in PRESETS],
        ),
        lambda: command(
            "3 paper presets at once, numpy engine, end to end",
            *[["-m", f"experiment=paper/{p}"] for p in PRESETS],
        ),
        lambda: command(
            "mts 100,000 seeds, jax, Parquet, run.every=10, end to end",
            ["run.engine=jax", many, "run.batch_size=25000", "run.format=parquet", "run.every=10"],
        ),
        lambda: command(
            "cd_ucb tau=2..200 (100 values) x 1,000 seeds, jax, one program, Parquet, end to end",
            [
                "-m",
                "agent=cd_ucb",
                "agent.tau=range(2,202,2)",
                "run.engine=jax",
                windows,
                "run.batch_size=100000",
                "run.format=parquet",
                "run.every=10",
            ],
        ),  # fmt: skip
    ):
        rows.append(row())
        print(rows[-1], flush=True)
    out.mkdir(parents=True, exist_ok=True)
    (out / "jax_device.md").write_text("\n".join(rows) + "\n")
    print("\n".join(rows))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
