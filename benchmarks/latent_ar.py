"""nslb's latent-AR agents against the LARL authors' code (not a test; ``make compare-latent-ar``).

    python -m benchmarks.latent_ar [--seeds 100] [--clone DIR] [--repository URL]

Fetches ``annatrella/latent-auto-bandits`` at ``COMMIT`` with git into ``--clone``
(``.bench/latent-auto-bandits``, ignored by git; reused when it is there) and runs their
experiment of the paper's section 6 (``run_simulations_exp2.py``: ``K = 2``, ``beta = ±1``,
``sigma_z = sigma_r = 1``, ``T = 200``, ``k = 1, 5, 10``, seeds ``0 … n-1``) twice through
``benchmarks/latent_ar_driver.py``: under their protocol, and with its departures corrected
(a fresh agent per seed, separate random streams for the environment and the agents, the
ground truth on the agents' own path, LARL-ETC keeping the fit of the ``s`` it chose). nslb
plays the same setting (``env=latent_ar/paper_k{k}``) with the matching agents, in one batch
per agent. The table gives each side's mean regret over rounds ``t >= k`` ± its standard
error and nslb's difference to the corrected code in combined standard errors; the command
fails when one exceeds ``TOLERANCE``. The worlds differ (nslb's streams are its own),
so the comparison is statistical.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from nslb_cli.runner.compose import load
from nslb_cli.runner.job import simulate_seeds

REPO = Path(__file__).resolve().parents[1]
DRIVER = Path(__file__).with_name("latent_ar_driver.py")
URL = "https://github.com/annatrella/latent-auto-bandits.git"
COMMIT = "c791f98b47112111966a38507de791767f2afd5d"  # 2025-02-27, the paper's code
KS = (1, 5, 10)
TOLERANCE = 3.0  # combined standard errors
AUTHORS_GAMMA = math.sqrt(2 * math.log(2) / (math.e * 2))  # their Rexp3: e, not e - 1
PAIRS = {  # the authors' agent -> nslb's overrides
    "LARL-ETC": ["agent=larl_etc"],
    "Stationary": ["agent=larl", "agent.s=0"],
    "AR UCB": ["agent=ar_ucb"],
    "Rexp3": ["agent=rexp3", f"agent.gamma={AUTHORS_GAMMA!r}"],
    "LARL-ETC (their s = max_s fit)": [],
    "": ["agent=kalman_oracle"],
}


def fetch(clone: Path, repository: str) -> None:
    """``repository`` at ``COMMIT`` in ``clone`` (cloned once; checked out every time)."""
    if not (clone / ".git").exists():
        subprocess.run(["git", "clone", "--quiet", repository, str(clone)], check=True)
    subprocess.run(["git", "-C", str(clone), "checkout", "--quiet", COMMIT], check=True)


def authors(clone: Path, protocol: str, seeds: int) -> dict[str, dict[str, list[float]]]:
    """The driver's per-seed regrets under ``protocol``."""
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "regrets.json"
        command = [sys.executable, str(DRIVER), str(clone), protocol, str(seeds), str(out)]
        subprocess.run(command, check=True)
        return json.loads(out.read_text())


def nslb(k: int, overrides: list[str], seeds: int) -> np.ndarray:
    """nslb's per-seed regret over rounds ``t >= k`` on the paper's setting."""
    config = load([f"env=latent_ar/paper_k{k}", *overrides, "run.progress=false"])
    trace = simulate_seeds(config, np.arange(seeds))
    return (trace.optimal_reward - trace.expected_reward)[:, k:].sum(axis=1)


def _cell(values: np.ndarray | None) -> str:
    if values is None:
        return "—"
    return f"{values.mean():.1f} ± {values.std(ddof=1) / math.sqrt(len(values)):.1f}"


def _gap(a: np.ndarray | None, b: np.ndarray | None) -> float | None:
    if a is None or b is None:
        return None
    se = math.hypot(a.std(ddof=1) / math.sqrt(len(a)), b.std(ddof=1) / math.sqrt(len(b)))
    return float((a.mean() - b.mean()) / se)


def _agent(overrides: list[str]) -> str:
    """``larl (s=0)`` for ``["agent=larl", "agent.s=0"]``."""
    if not overrides:
        return "—"
    rest = [o.removeprefix("agent.").split("=") for o in overrides[1:]]
    shown = ", ".join(f"{key}={float(value):.3g}" for key, value in rest)
    return overrides[0].removeprefix("agent=") + (f" ({shown})" if shown else "")


def table(seeds: int, original: dict, corrected: dict) -> tuple[str, list[str]]:
    """The markdown table and the rows off by more than ``TOLERANCE``."""
    lines = [
        "| k | authors' agent | their protocol | corrected | nslb | nslb agent | Δ / combined SE |",
        "|---:|---|---:|---:|---:|---|---:|",
    ]
    failed = []
    for k in KS:
        for name, overrides in PAIRS.items():
            theirs = original[str(k)].get(name)
            fixed = corrected[str(k)].get(name)
            ours = nslb(k, overrides, seeds) if overrides else None
            gap = _gap(ours, None if fixed is None else np.asarray(fixed))
            shown = "—" if gap is None else f"{gap:+.2f}"
            agent = _agent(overrides)
            row = [str(k), name or "—", _cell(None if theirs is None else np.asarray(theirs))]
            row += [_cell(None if fixed is None else np.asarray(fixed)), _cell(ours), agent, shown]
            lines.append("| " + " | ".join(row) + " |")
            if gap is not None and abs(gap) > TOLERANCE:
                failed.append(f"k = {k}, {name}: {gap:+.2f} combined standard errors")
    return "\n".join(lines), failed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument("--clone", type=Path, default=REPO / ".bench" / "latent-auto-bandits")
    parser.add_argument("--repository", default=URL, help="where to clone from (a URL or path)")
    args = parser.parse_args()
    fetch(args.clone, args.repository)
    original = authors(args.clone, "authors", args.seeds)
    corrected = authors(args.clone, "corrected", args.seeds)
    text, failed = table(args.seeds, original, corrected)
    machine = f"{platform.machine()}, {platform.processor() or platform.system()}"
    print(f"seeds 0–{args.seeds - 1}, T = 200, commit {COMMIT[:7]}, Python "
          f"{platform.python_version()}, numpy {np.__version__}, {machine}\n")  # fmt: skip
    print(text)
    for line in failed:
        print(f"off by more than {TOLERANCE:g}: {line}", file=sys.stderr)
    raise SystemExit(1 if failed else 0)


if __name__ == "__main__":
    main()
