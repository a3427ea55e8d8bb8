"""``make bench``: simulation speed and memory, as ratios against baselines measured in the
same run (absolute seconds vary across machines; ratios are what to compare).

    python -m nslb_cli.bench [--seeds 100] [--horizon 500]

Reports, on the synthetic environment (markov dynamics, prior model):
* seconds per agent for one batch of seeds, and the ratio to mTS;
* batching: mTS on the seeds one at a time vs in one batch;
* umTS time and peak traced memory as the number of particles grows, relative to N = 10.
"""

from __future__ import annotations

import argparse
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from nslb_cli.agents import AGENTS
from nslb_cli.config import RunConfig, RunSettings
from nslb_cli.envs.synthetic import SyntheticParams
from nslb_cli.job import simulate_seeds


def _config(agent: str, env: SyntheticParams, **agent_params: object) -> RunConfig:
    params = replace(AGENTS[agent].Params(), **agent_params)
    return RunConfig("bench", env, params, RunSettings(progress=False))


def _timed(task: Callable[[], object], repeats: int = 3) -> float:
    """Best of ``repeats`` wall times: the least disturbed by other work on the machine."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        task()
        times.append(time.perf_counter() - start)
    return min(times)


def _peak_memory(task: Callable[[], object]) -> float:
    """Peak traced allocation of ``task`` in MiB."""
    tracemalloc.start()
    task()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / 2**20


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="nslb-bench", description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument("--horizon", type=int, default=500)
    args = parser.parse_args(argv)
    env = SyntheticParams(model="prior", horizon=args.horizon)
    seeds = np.arange(args.seeds)

    print(f"agents: {args.seeds} seeds x {args.horizon} rounds in one batch (best of 3)")
    baseline = _timed(lambda: simulate_seeds(_config("mts", env), seeds))
    for name in sorted(set(AGENTS) - {"mts"}):
        seconds = _timed(lambda name=name: simulate_seeds(_config(name, env), seeds))
        print(
            f"  {name:<10} {seconds:8.2f} s   x{seconds / baseline:6.2f} of mts ({baseline:.2f} s)"
        )

    print("batching: mts, seeds one at a time vs one batch")
    one_by_one = _timed(lambda: [simulate_seeds(_config("mts", env), np.array([s])) for s in seeds])
    print(
        f"  one at a time {one_by_one:.2f} s, batched {baseline:.2f} s: "
        f"batching is x{one_by_one / baseline:.1f} faster"
    )

    print("umts: particles (time and peak traced memory relative to N = 10)")
    small = _config("umts", env, num_particles=10)
    base_time = _timed(lambda: simulate_seeds(small, seeds), repeats=1)
    base_memory = _peak_memory(lambda: simulate_seeds(small, seeds[:10]))
    for n in (10, 100, 1000):
        config = _config("umts", env, num_particles=n)
        seconds = _timed(lambda config=config: simulate_seeds(config, seeds), repeats=1)
        memory = _peak_memory(lambda config=config: simulate_seeds(config, seeds[:10]))
        print(
            f"  N={n:<5} {seconds:8.2f} s  x{seconds / base_time:6.1f}   "
            f"{memory:8.1f} MiB (10 seeds)  x{memory / base_memory:6.1f}"
        )


if __name__ == "__main__":
    main()
