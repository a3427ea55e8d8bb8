"""nslb's filter oracle against the switching-latent authors' code (``make compare-switching``).

    python -m benchmarks.switching_latent [--runs 30] [--horizon 10000] [--clone DIR]
        [--repository URL] [--checkout DIR]

Fetches ``alesnow97/SwitchingLatentBandits`` (Russo, Metelli & Restelli, TMLR 2024) at
``COMMIT`` with git into ``--clone`` (``.bench/SwitchingLatentBandits``, ignored by git;
reused when it is there), or reads an existing checkout of that commit as it is
(``--checkout DIR``: nothing is fetched). Their ``OraclePolicy`` plays their Figure 2a loop on
their stored instance (``experiments/regret_figure_2a/3states_4actions_5obs``, bandit 0: 3
states, 4 arms, 5 outcomes) through ``benchmarks/switching_latent_driver.py``, twice: with its
belief propagated by ``P`` as their chain moves (corrected) and by ``P.T`` as written. nslb plays
``env=switching_latent env.problem=<their bandit_info.json>`` with ``agent=filter_oracle`` and
``agent=mts`` on seeds ``0 … runs-1``. Both sides' regret is ``sum_t max_a mu(a, S_t) -
mu(A_t, S_t)``, against the arm best in the true current state. The table gives each row's
mean final regret ± its standard error and its difference to the authors' corrected oracle in
combined standard errors; the command fails when nslb's filter oracle is off by more than
``TOLERANCE``. The worlds differ (nslb's streams are its own), so the comparison is
statistical.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from nslb_cli.runner.compose import load
from nslb_cli.runner.job import simulate_seeds

REPO = Path(__file__).resolve().parents[1]
DRIVER = Path(__file__).with_name("switching_latent_driver.py")
URL = "https://github.com/alesnow97/SwitchingLatentBandits.git"
COMMIT = "015a50d51b39b918cccdc0e5b8c8f9556981816e"  # 2024-08-24, the paper's code
INSTANCE = "experiments/regret_figure_2a/3states_4actions_5obs/bandit0/bandit_info.json"
TOLERANCE = 3.0  # combined standard errors
AUTHORS = {  # the driver's protocol -> the row's agent
    "corrected": "OraclePolicy, b·P (corrected)",
    "as-written": "OraclePolicy, b·Pᵀ (as written)",
}
NSLB = ("filter_oracle", "mts")


def fetch(clone: Path, repository: str) -> None:
    """``repository`` at ``COMMIT`` in ``clone`` (cloned once; checked out every time)."""
    if not (clone / ".git").exists():
        subprocess.run(["git", "clone", "--quiet", repository, str(clone)], check=True)
    subprocess.run(["git", "-C", str(clone), "checkout", "--quiet", COMMIT], check=True)


def authors(checkout: Path, protocol: str, runs: int, horizon: int) -> np.ndarray:
    """The driver's per-run regrets of their oracle under ``protocol`` (global seed 0)."""
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "regrets.json"
        command = [sys.executable, str(DRIVER), str(checkout), protocol, str(runs),
                   str(horizon), "0", str(out)]  # fmt: skip
        subprocess.run(command, check=True)
        return np.asarray(json.loads(out.read_text()))


def nslb(problem: Path, agent: str, runs: int, horizon: int) -> np.ndarray:
    """nslb's per-seed final regret of ``agent`` on the authors' problem, seeds 0 … runs-1."""
    config = load([
        "env=switching_latent", f"env.problem={problem}", f"env.horizon={horizon}",
        f"agent={agent}", f"run.n_seeds={runs}", "run.progress=false",
    ])  # fmt: skip
    trace = simulate_seeds(config, config.seeds)
    return trace.regret.sum(axis=1)


def _se(values: np.ndarray) -> float:
    return float(values.std(ddof=1) / math.sqrt(len(values)))


def _gap(a: np.ndarray, b: np.ndarray) -> float:
    """``mean(a) - mean(b)`` in combined standard errors (independent samples)."""
    return float((a.mean() - b.mean()) / math.hypot(_se(a), _se(b)))


def table(rows: list[tuple[str, str, np.ndarray]]) -> str:
    """The markdown table; the first row is the reference of the last column."""
    reference = rows[0][2]
    lines = [
        "| agent | side | final regret, mean ± SE | Δ to their corrected oracle / combined SE |",
        "|---|---|---:|---:|",
    ]
    for index, (agent, side, values) in enumerate(rows):
        gap = "—" if index == 0 else f"{_gap(values, reference):+.2f}"
        cell = f"{values.mean():.1f} ± {_se(values):.1f}"
        lines.append(f"| {agent} | {side} | {cell} | {gap} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30, help="runs per side (nslb: seeds)")
    parser.add_argument("--horizon", type=int, default=10000, help="rounds per run")
    parser.add_argument("--clone", type=Path, default=REPO / ".bench" / "SwitchingLatentBandits")
    parser.add_argument("--repository", default=URL, help="where to clone from (a URL or path)")
    parser.add_argument(
        "--checkout", type=Path, help="their code at COMMIT already on disk, used as is (no git)"
    )
    args = parser.parse_args()
    checkout = args.checkout
    if checkout is None:
        fetch(args.clone, args.repository)
        checkout = args.clone
    problem = (checkout / INSTANCE).resolve()
    start = time.perf_counter()
    rows = [(AUTHORS[p], "authors' code", authors(checkout, p, args.runs, args.horizon))
            for p in AUTHORS]  # fmt: skip
    seconds = {"authors' code": time.perf_counter() - start}
    start = time.perf_counter()
    ours = {agent: nslb(problem, agent, args.runs, args.horizon) for agent in NSLB}
    seconds["nslb"] = time.perf_counter() - start
    rows += [(agent, "nslb", values) for agent, values in ours.items()]
    machine = f"{platform.machine()}, {platform.processor() or platform.system()}"
    print(f"{args.runs} runs per side of T = {args.horizon:,} rounds (authors: numpy's global "
          f"generator seeded 0; nslb: seeds 0–{args.runs - 1}), commit {COMMIT[:7]}, Python "
          f"{platform.python_version()}, numpy {np.__version__}, {machine}\n")  # fmt: skip
    print(table(rows))
    paired = ours["mts"] - ours["filter_oracle"]
    print(f"\nmts − filter_oracle, paired by seed (nslb; the papers' regret of mTS): "
          f"{paired.mean():.1f} ± {_se(paired):.1f}")  # fmt: skip
    print("wall time: " + ", ".join(f"{side} {s:.1f} s" for side, s in seconds.items()))
    gap = _gap(ours["filter_oracle"], rows[0][2])
    if abs(gap) > TOLERANCE:
        print(f"off by more than {TOLERANCE:g}: filter_oracle {gap:+.2f} combined standard "
              "errors from the authors' corrected oracle", file=sys.stderr)  # fmt: skip
        raise SystemExit(1)


if __name__ == "__main__":
    main()
