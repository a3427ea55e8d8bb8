"""A sweep over traced parameters on the JAX engine: one program for the group, the next
jobs' lanes in the same batch, and every job's folder as it would be had it run alone,
through stopped, blocked and half-done sweeps.

On a CPU the JAX engine is for parity of numbers, which CI checks (test_agreement.py and the
batch tests of test_cli.py); this module's machinery runs with ``make test-full``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("jax")
pytestmark = pytest.mark.slow

from nslb_cli.agents import AGENTS  # noqa: E402
from nslb_cli.common.apart import run_apart  # noqa: E402
from nslb_cli.envs.synthetic import SyntheticParams  # noqa: E402
from tests.helpers.cli import nslb_process as nslb  # noqa: E402

TAUS = (8, 20, 40)
JOB = ("agent=cd_ucb", "run.engine=jax", "env.dynamics=fixed", "env.horizon=450")
SWEEP = ("-m", *JOB, f"agent.tau={','.join(map(str, TAUS))}", "run.n_seeds=6",
         "run.batch_size=18")  # fmt: skip  # 18 lanes: the three jobs in one batch


def job_folder(root: Path, tau: int) -> Path:
    return root / f"synthetic/cd_ucb/agent.tau={tau},{','.join(sorted(JOB[1:]))}"


def seed_files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.glob("seed=*.*"))}


@pytest.fixture(scope="module")
def alone(tmp_path_factory: pytest.TempPathFactory) -> dict[int, dict[str, bytes]]:
    """Each window's seed files, its job run on its own."""
    root = tmp_path_factory.mktemp("alone")
    files = {}
    for tau in TAUS:
        done = nslb("run", *JOB, f"agent.tau={tau}", "run.n_seeds=6",
                    f"hydra.run.dir={root / str(tau)}", cwd=root)  # fmt: skip
        assert done.returncode == 0, done.stderr
        files[tau] = seed_files(root / str(tau))
    return files


def test_a_window_sweep_is_one_program_and_each_job_writes_what_it_writes_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, alone: dict[int, dict[str, bytes]]
) -> None:
    monkeypatch.setenv("NSLB_CACHE", str(tmp_path / "cache"))  # every program compiled anew
    done = nslb("run", *SWEEP, f"hydra.sweep.dir={tmp_path / 's'}", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert sum("compiling the JAX program" in line for line in done.stderr.splitlines()) == 1
    for tau in TAUS:
        assert seed_files(job_folder(tmp_path / "s", tau)) == alone[tau]
    record = json.loads(alone[TAUS[0]]["seed=0.json"])
    assert record["detections"] == len(record["detection_rounds"]) > 0  # written as JSON


def test_blocked_and_half_done_jobs_of_a_sweep_end_as_they_would_alone(
    tmp_path: Path, alone: dict[int, dict[str, bytes]]
) -> None:
    """The middle job's folder is blocked by a file: it fails alone, the others finish (the
    last one from the batch the first filled). The last job's folder held three seeds
    already: it simulates the three it lacks itself. The rerun finishes the blocked job."""
    root = tmp_path / "s"
    half = nslb("run", *JOB, f"agent.tau={TAUS[2]}", "run.n_seeds=3",
                f'hydra.run.dir="{job_folder(root, TAUS[2])}"', cwd=tmp_path)  # fmt: skip
    assert half.returncode == 0, half.stderr
    blocked = job_folder(root, TAUS[1])
    blocked.parent.mkdir(parents=True, exist_ok=True)
    blocked.write_text("not a folder")
    first = nslb("run", *SWEEP, f"hydra.sweep.dir={root}", cwd=tmp_path)
    assert first.returncode == 1 and "1 of 3 sweep jobs failed" in first.stderr, first.stderr
    assert seed_files(job_folder(root, TAUS[0])) == alone[TAUS[0]]
    assert seed_files(job_folder(root, TAUS[2])) == alone[TAUS[2]]
    blocked.unlink()
    again = nslb("run", *SWEEP, f"hydra.sweep.dir={root}", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    for tau in TAUS:
        assert seed_files(job_folder(root, tau)) == alone[tau]


def test_the_jobs_after_one_take_their_lanes_from_its_batch() -> None:
    """Exp4.S over three exploration rates: the first job's batch holds the others' lanes,
    which they take instead of simulating; every lane equals its job simulated alone, and
    each job is charged an equal share of the batch's seconds (its compute cost)."""

    def grouped_and_alone() -> tuple[list[object], list[object], int]:
        from nslb_cli.jax_engine import scan
        from nslb_cli.jax_engine.engine import plan_sweep, simulate_seeds

        env, seeds = SyntheticParams(horizon=80), np.arange(4)
        jobs = [AGENTS["exp4s"].Params(gamma=g) for g in (0.05, 0.1, 0.3)]
        shared = plan_sweep([(env, params, (12, 1)) for params in jobs], lambda e, a, n: True)
        grouped = [simulate_seeds(env, params, seeds, 12, shared=shared) for params in jobs]
        programs = len(scan._COMPILED)
        return grouped, [simulate_seeds(env, p, seeds, 12) for p in jobs], programs

    grouped, single, programs = run_apart(grouped_and_alone, "the JAX engine")
    assert programs == 1
    shares = [trace.seconds for trace in grouped]
    assert shares[0] > 0 and shares == pytest.approx([shares[0]] * 3)
    for together, by_itself in zip(grouped, single, strict=True):
        for column in ("action", "reward", "state", "belief"):
            np.testing.assert_array_equal(getattr(together, column), getattr(by_itself, column))
        np.testing.assert_allclose(together.p_true_state, by_itself.p_true_state, rtol=1e-12)
        assert together.summary["gamma"].tolist() == by_itself.summary["gamma"].tolist()


def test_a_batch_holds_only_the_jobs_whose_lanes_fit_in_memory() -> None:
    """Each job alone was checked; a batch of several jobs' lanes (each as wide as the
    group's largest window) holds as many as the memory check allows."""

    def waiting_after_the_first_job() -> tuple[int, int]:
        from nslb_cli.jax_engine.engine import plan_sweep, simulate_seeds

        env, seeds = SyntheticParams(horizon=60), np.arange(4)
        jobs = [AGENTS["cd_ucb"].Params(tau=tau) for tau in (4, 6, 8, 10, 12)]
        widths = []
        fits = lambda env, agent, lanes: widths.append(agent.tau) or lanes <= 8  # noqa: E731
        shared = plan_sweep([(env, params, (100, 1)) for params in jobs], fits)
        simulate_seeds(env, jobs[0], seeds, 100, shared=shared)
        return len(shared.waiting), max(widths)

    assert run_apart(waiting_after_the_first_job, "the JAX engine") == (1, 12)


def test_one_batch_at_most_waits_when_the_jobs_of_two_groups_alternate() -> None:
    """Exp4.S over two exploration rates (the outer key) and two horizons: the jobs of the
    two horizons' groups alternate. Lanes wait for one group at a time (one batch at most),
    and every job's trace is still its own."""

    def grouped_and_alone() -> tuple[int, list[object], list[object]]:
        from nslb_cli.jax_engine.engine import plan_sweep, simulate_seeds

        seeds = np.arange(3)
        jobs = [(SyntheticParams(horizon=h), AGENTS["exp4s"].Params(gamma=g))
                for g in (0.1, 0.2) for h in (30, 40)]  # fmt: skip
        shared = plan_sweep([(env, params, (12, 1)) for env, params in jobs], lambda e, a, n: True)
        grouped, most = [], 0
        for env, params in jobs:
            grouped.append(simulate_seeds(env, params, seeds, 12, shared=shared))
            most = max(most, len({group for group, _, _ in shared.waiting}))
        return most, grouped, [simulate_seeds(env, params, seeds, 12) for env, params in jobs]

    most, grouped, single = run_apart(grouped_and_alone, "the JAX engine")
    assert most == 1
    for together, by_itself in zip(grouped, single, strict=True):
        for column in ("action", "reward", "state", "belief"):
            np.testing.assert_array_equal(getattr(together, column), getattr(by_itself, column))


def test_what_a_sweeps_jobs_share_ends_with_the_sweep() -> None:
    """The JAX engine holds what a sweep's jobs share while the sweep's block runs only: a
    job simulated after it takes no lanes the sweep left for it: it compiles its own
    program (its window's, not the group's widest)."""

    def programs_in_and_after() -> tuple[int, int]:
        from nslb_cli.jax_engine import scan
        from nslb_cli.runner.config import RunSettings
        from nslb_cli.runner.engines import ENGINES

        engine, env, seeds = ENGINES["jax"], SyntheticParams(horizon=40), np.arange(2)
        jobs = [AGENTS["cd_ucb"].Params(tau=tau) for tau in (8, 4)]  # a program for 8
        run = RunSettings(batch_size=4, progress=False)
        with engine.sharing([(env, params, (4, 1)) for params in jobs], lambda e, a, n: True):
            engine.simulate(env, jobs[0], seeds, run)  # the second job's lanes wait
        during = len(scan._COMPILED)
        engine.simulate(env, jobs[1], seeds, run)
        return during, len(scan._COMPILED)

    assert run_apart(programs_in_and_after, "the JAX engine") == (1, 2)


def _grouped_and_alone(jobs: list[tuple[object, object]]) -> tuple[int, list[Any], list[Any]]:
    """``jobs`` (env and agent params) run as a planned sweep (the programs it compiled, its
    traces), then each alone."""
    from nslb_cli.jax_engine import scan
    from nslb_cli.jax_engine.engine import plan_sweep, simulate_seeds

    seeds = np.arange(3)
    scan._COMPILED.clear()
    shared = plan_sweep([(env, params, (24, 1)) for env, params in jobs], lambda e, a, n: True)
    grouped = [simulate_seeds(env, params, seeds, 24, shared=shared) for env, params in jobs]
    programs = len(scan._COMPILED)
    return programs, grouped, [simulate_seeds(env, params, seeds, 24) for env, params in jobs]


CD_UCB = ("cd_ucb", "tau", (4, 8))
SLOW = pytest.mark.slow  # a program of its own to compile (seconds in CI): with make test-full
# (CI: a switching rate and the noise; the prior's spreads and concentrations are slow)
UMTS = ("umts", "resample_threshold", (0.2, 0.9))  # reads the prior's spread


@pytest.mark.parametrize(
    ("name", "values", "fixed", "agent"),
    [("switch_prob", (0.02, 0.3), {}, CD_UCB),
     pytest.param("period", (7, 30), {"dynamics": "fixed"}, CD_UCB, marks=SLOW),
     pytest.param("stay_concentration", (5.0, 796.0), {"model": "prior"}, CD_UCB, marks=SLOW),
     pytest.param("move_concentration", (0.5, 20.0), {"model": "prior"}, CD_UCB, marks=SLOW),
     pytest.param("prior_sd", (0.05, 0.5), {"model": "prior"}, UMTS, marks=SLOW),
     pytest.param("prior_strength", (1.0, 30.0), {"model": "prior", "reward": "bernoulli"},
                  UMTS, marks=SLOW),
     ("sigma", (0.1, 1.0), {}, CD_UCB),  # the agents read the reward noise too
     pytest.param("sigma", (1e-6, 1e6), {}, CD_UCB, marks=SLOW),  # the extremes accepted
     pytest.param("sigma", (0.1, 1.0), {"model": "prior"}, UMTS, marks=SLOW)],
)  # fmt: skip
def test_a_sweep_over_the_worlds_rates_and_an_agents_parameter_is_one_program(
    name: str, values: tuple[float, ...], fixed: dict[str, object], agent: tuple[Any, ...]
) -> None:
    """The synthetic world's switching rates, prior spreads and reward noise are traced like
    the agents' parameters: a grid over both is one program, and every job's trace is the one
    it has alone (which a lane left at the group's largest value, or another lane's, would
    not be: for the noise, in the world's rewards or in what the agent reads of it)."""
    label, key, settings = agent
    params = AGENTS[label].Params
    small = {"num_particles": 8} if label == "umts" else {}
    jobs = [(SyntheticParams(horizon=80, **fixed, **{name: value}), params(**small, **{key: v}))
            for value in values for v in settings]  # fmt: skip
    programs, grouped, single = run_apart(lambda: _grouped_and_alone(jobs), "the JAX engine")
    assert programs == 1
    shares = [trace.seconds for trace in grouped]
    assert shares[0] > 0 and shares == pytest.approx([shares[0]] * 3)
    for together, by_itself in zip(grouped, single, strict=True):
        for column in ("action", "reward", "state", "expected_reward", "p_true_state"):
            np.testing.assert_array_equal(getattr(together, column), getattr(by_itself, column))
    assert not np.array_equal(grouped[0].expected_reward, grouped[2].expected_reward)


@pytest.mark.slow  # in CI: the world's rates as one program (above), a window sweep writing
# each job's files alone (first test), a bad sweep value refused whole (tests/cli/test_run.py)
def test_an_env_sweep_from_the_command_line_is_one_program_and_refused_whole_for_a_bad_value(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``-m env.switch_prob=…`` on the JAX engine: a value that is not a probability refuses
    the sweep in one line before anything is compiled or written; without it, the sweep is
    one program and each job writes what it writes alone (two seeds: alone, a job once
    gave each of two CPU devices one lane, and XLA summed mTS's filter in another order)."""
    monkeypatch.setenv("NSLB_CACHE", str(tmp_path / "cache"))
    job = ("agent=mts", "run.engine=jax", "env.horizon=120", "run.n_seeds=2")  # 1 lane a CPU
    sweep = ("run", "-m", *job, f"hydra.sweep.dir={tmp_path / 's'}")
    bad = nslb(*sweep, "env.switch_prob=0.01,1.5,0.2", cwd=tmp_path)
    assert bad.returncode == 2 and "env.switch_prob: must be in [0, 1], got 1.5" in bad.stderr
    assert "compiling" not in bad.stderr and not (tmp_path / "s/synthetic").exists()
    done = nslb(*sweep, "env.switch_prob=0.01,0.2", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert sum("compiling the JAX program" in line for line in done.stderr.splitlines()) == 1
    for value in ("0.01", "0.2"):
        alone = nslb("run", *job, f"env.switch_prob={value}",
                     f"hydra.run.dir={tmp_path / value}", cwd=tmp_path)  # fmt: skip
        assert alone.returncode == 0, alone.stderr
        (folder,) = (tmp_path / "s/synthetic/mts").glob(f"*env.switch_prob={value},*")
        assert seed_files(folder) == seed_files(tmp_path / value)


def test_a_sliding_window_sweep_is_one_program() -> None:
    """SW-mUCB's window is traced like CD-UCB's: its sweep is one program whose ring is as
    wide as the largest window, and every job plays what it plays alone (which a lane
    whose window were the ring's width would not)."""
    sw_mucb = AGENTS["sw_mucb"].Params
    env = SyntheticParams(horizon=300, dynamics="fixed", period=60)
    jobs = [(env, sw_mucb(tau=tau)) for tau in (5, 30, 90)]
    programs, grouped, single = run_apart(lambda: _grouped_and_alone(jobs), "the JAX engine")
    assert programs == 1
    shares = [trace.seconds for trace in grouped]
    assert shares[0] > 0 and shares == pytest.approx([shares[0]] * 3)
    for together, by_itself in zip(grouped, single, strict=True):
        for column in ("action", "reward", "belief", "p_true_state"):
            np.testing.assert_array_equal(getattr(together, column), getattr(by_itself, column))
        assert together.summary["fallbacks"].tolist() == by_itself.summary["fallbacks"].tolist()
    assert not np.array_equal(grouped[0].action, grouped[2].action)  # the windows matter


def test_a_plugins_agent_never_shares_a_program_over_the_reward_noise() -> None:
    """An agent that does not declare ``noise_traced`` may have read ``sigma`` as a number
    when built: a sweep over the noise then compiles a program per value, while the
    world's other traced parameters still group its jobs."""
    from nslb_cli.jax_engine import sweep
    from nslb_cli.jax_engine.agents import built_in
    from nslb_cli.jax_engine.worlds import WORLDS

    job = (SyntheticParams(), AGENTS["mts"].Params())
    assert "sigma" in sweep.traced(job, WORLDS.get, built_in).env
    plugin = sweep.traced(job, WORLDS.get, lambda name: None).env
    assert "sigma" not in plugin and "switch_prob" in plugin


ORDERED = ("agent=cd_ucb", "run.engine=jax", "env.horizon=200", "run.n_seeds=3")
TRACED_FIRST = ("-m", *ORDERED, "agent.tau=8,20", "env.dynamics=fixed,markov", "run.batch_size=6")


def _launched(done: Any) -> list[str]:
    """The job numbers in the order the launcher ran them."""
    lines = [line for line in (done.stdout + done.stderr).splitlines() if "\t#" in line]
    return [line.split("#")[1].split(" ")[0] for line in lines]


def _compiled(done: Any) -> int:
    return sum("compiling the JAX program" in line for line in done.stderr.splitlines())


def _ordered_folder(root: Path, tau: int, dynamics: str) -> Path:
    name = f"agent.tau={tau},env.dynamics={dynamics},env.horizon=200,run.engine=jax"
    return root / "synthetic" / "cd_ucb" / name


def test_a_groups_jobs_run_one_after_another_whatever_the_order_of_the_keys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hydra varies the last key fastest: with the traced key first, the jobs of the two
    dynamics alternate. nslb's launcher runs each group's jobs one after another, so each
    group compiles one program and fills one batch; every job still writes what it writes
    alone, and Hydra gets the jobs' returns in its own order."""
    monkeypatch.setenv("NSLB_CACHE", str(tmp_path / "cache"))  # every program compiled anew
    done = nslb("run", *TRACED_FIRST, f"hydra.sweep.dir={tmp_path / 's'}", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert _compiled(done) == 2
    assert _launched(done) == ["0", "2", "1", "3"]  # fixed, fixed, markov, markov
    alone = nslb("run", *ORDERED, "agent.tau=20", "env.dynamics=markov",
                 f"hydra.run.dir={tmp_path / 'alone'}", cwd=tmp_path)  # fmt: skip
    assert alone.returncode == 0, alone.stderr
    folder = _ordered_folder(tmp_path / "s", 20, "markov")
    assert seed_files(folder) == seed_files(tmp_path / "alone") != {}


def test_a_groups_lanes_that_a_failed_job_left_do_not_keep_the_next_group_from_its_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fixed group's batch holds the lanes of its blocked second job, which never takes
    them: the markov group, whose turn comes next, still shares one batch of its two jobs'
    six lanes (not a program of its first job's lanes alone, and a batch more)."""
    monkeypatch.setenv("NSLB_CACHE", str(tmp_path / "cache"))
    blocked = _ordered_folder(tmp_path / "s", 20, "fixed")
    blocked.parent.mkdir(parents=True)
    blocked.write_text("not a folder")
    done = nslb("run", *TRACED_FIRST, f"hydra.sweep.dir={tmp_path / 's'}", cwd=tmp_path)
    assert done.returncode == 1 and "1 of 4 sweep jobs failed" in done.stderr, done.stderr
    programs = [line for line in done.stderr.splitlines() if "compiling the JAX program" in line]
    assert [line.split("(")[1].split(")")[0] for line in programs] == ["6 seeds", "6 seeds"]


@pytest.mark.slow  # in CI: the launcher's order of a group's jobs (above)
def test_with_fail_fast_the_jobs_keep_hydras_order(tmp_path: Path) -> None:
    """``run.fail_fast=true`` skips the jobs after the first failure: the jobs run in
    Hydra's order, so those are the jobs numbered after it (here #3 only)."""
    blocked = _ordered_folder(tmp_path / "s", 20, "fixed")  # job #2
    blocked.parent.mkdir(parents=True)
    blocked.write_text("not a folder")
    done = nslb("run", *TRACED_FIRST, "run.fail_fast=true", f"hydra.sweep.dir={tmp_path / 's'}",
                cwd=tmp_path)  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert _launched(done) == ["0", "1", "2", "3"]
    assert len(seed_files(_ordered_folder(tmp_path / "s", 8, "markov"))) == 6  # #1 ran
    assert seed_files(_ordered_folder(tmp_path / "s", 20, "markov")) == {}  # #3 skipped
