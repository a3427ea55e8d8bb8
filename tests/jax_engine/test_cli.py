"""``run.engine=jax`` as a user runs it: the same folders and columns, its own result key,
seeds independent of their batch, and one line for what the engine does not cover."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("jax")

from nslb_cli.agents import AGENTS  # noqa: E402
from nslb_cli.common.apart import Ended, forbid_forks, run_apart  # noqa: E402
from nslb_cli.envs.synthetic import SyntheticParams  # noqa: E402
from nslb_cli.jax_engine import coverage  # noqa: E402
from nslb_cli.jax_engine.agents import own  # noqa: E402
from nslb_cli.jax_engine.engine import simulate_seeds  # noqa: E402
from nslb_cli.plot.notebook import load_results  # noqa: E402
from tests.helpers.cli import nslb_process as nslb  # noqa: E402
from tests.helpers.cli import said  # noqa: E402

SMALL = ("env.horizon=40", "run.n_seeds=3")


@pytest.mark.slow  # the JAX engine's machinery on a CPU: make test-full
def test_a_jax_run_writes_the_columns_of_the_default_engine_in_a_folder_of_its_own(
    tmp_path: Path,
) -> None:
    for engine in ([], ["run.engine=jax"]):
        done = nslb("run", "name=e", *engine, *SMALL, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    numpy_folder = tmp_path / "outputs/e/synthetic/mts/env.horizon=40"
    jax_folder = tmp_path / "outputs/e/synthetic/mts/env.horizon=40,run.engine=jax"
    header = (numpy_folder / "seed=0.csv").read_text().splitlines()[0]
    assert (jax_folder / "seed=0.csv").read_text().splitlines()[0] == header
    assert len((jax_folder / "seed=2.csv").read_text().splitlines()) == 41
    assert (numpy_folder / "seed=0.csv").read_bytes() != (jax_folder / "seed=0.csv").read_bytes()


@pytest.mark.slow  # the JAX engine's machinery on a CPU: make test-full
def test_readers_keep_the_two_engines_runs_apart_and_pair_seeds_within_an_engine(
    tmp_path: Path,
) -> None:
    for args in (["run.engine=jax"], ["run.engine=jax", "agent=random"], ["run.seed=3"]):
        done = nslb("run", "name=e", *args, *SMALL, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    frame = load_results(tmp_path / "outputs")
    finals = frame[frame["t"] == 40]
    seeds = finals.groupby(["group", "agent"], observed=True)["seed"].apply(sorted).to_dict()
    # the default engine's mTS has seeds 3-5 (run.seed=3), the JAX engine's 0-2: not one run
    assert seeds == {
        ("e", "mTS"): [3, 4, 5],
        ("e (run.engine=jax)", "mTS"): [0, 1, 2],
        ("e (run.engine=jax)", "Random"): [0, 1, 2],
    }
    plotted = nslb("plot", "outputs", "--format", "png", cwd=tmp_path)
    assert plotted.returncode == 0, plotted.stderr
    tables = plotted.stdout.split("### ")
    jax_table = next(t for t in tables if t.startswith("e (run.engine=jax)\n"))
    numpy_table = next(t for t in tables if t.startswith("e\n"))
    assert "| mTS | 3 |" in jax_table and "| Random | 3 |" in jax_table
    assert "| mTS | 3 |" in numpy_table and "Random" not in numpy_table


def test_results_of_the_two_engines_never_mix_in_one_folder(tmp_path: Path) -> None:
    folder = f"hydra.run.dir={tmp_path / 'one'}"
    assert nslb("run", folder, *SMALL, cwd=tmp_path).returncode == 0
    before = (tmp_path / "one/seed=0.csv").read_bytes()
    mixed = nslb("run", folder, "run.engine=jax", *SMALL, cwd=tmp_path)
    assert mixed.returncode != 0
    assert len(said(mixed.stderr)) == 1
    assert (tmp_path / "one/seed=0.csv").read_bytes() == before


@pytest.mark.slow  # the JAX engine's machinery on a CPU: make test-full
def test_more_seeds_later_leave_the_first_ones_byte_identical(tmp_path: Path) -> None:
    folder = f"hydra.run.dir={tmp_path / 'grow'}"
    assert nslb("run", folder, "run.engine=jax", *SMALL, cwd=tmp_path).returncode == 0
    first = (tmp_path / "grow/seed=1.csv").read_bytes()
    grown = nslb("run", folder, "run.engine=jax", "env.horizon=40", "run.n_seeds=5",
                 "run.batch_size=2", cwd=tmp_path)  # fmt: skip
    assert grown.returncode == 0, grown.stderr
    assert (tmp_path / "grow/seed=1.csv").read_bytes() == first
    assert (tmp_path / "grow/seed=4.csv").is_file()


OLD = "JAX engine numbers 1, jax 0.4.0, jaxlib 0.4.0"
DAMAGES = {  # how provenance.jsonl is changed -> what the refusal names
    "another revision": (lambda entry: json.dumps(entry | {"numbers": OLD}), OLD),
    "an earlier build": (lambda entry: json.dumps(entry | {"numbers": None}),
                         "none recorded (an earlier build)"),
    "a cut line": (lambda entry: json.dumps(entry)[:40], "a damaged provenance.jsonl line"),
    "an empty file": (lambda entry: "", "seed=0, seed=1, seed=2 in no provenance.jsonl line"),
}  # fmt: skip


@pytest.fixture(scope="module")
def jax_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run folder of three seeds the JAX engine wrote (copied by each test that damages it)."""
    root = tmp_path_factory.mktemp("jax")
    done = nslb("run", f"hydra.run.dir={root / 'old'}", "run.engine=jax", *SMALL, cwd=root)
    assert done.returncode == 0, done.stderr
    return root / "old"


@pytest.mark.parametrize("damage", DAMAGES)
def test_seeds_whose_jax_engine_numbers_are_not_known_to_be_these_are_not_added_to(
    tmp_path: Path, damage: str, jax_folder: Path
) -> None:
    """A folder whose seeds another revision of the engine's numbers (or of JAX) wrote, a
    build that did not record them, or whose record is damaged or lost: more seeds are
    refused in one line, the folder is left as it was, and run.overwrite=true simulates
    them all again."""
    shutil.copytree(jax_folder, tmp_path / "old")
    folder = f"hydra.run.dir={tmp_path / 'old'}"
    provenance = tmp_path / "old/provenance.jsonl"
    entry = json.loads(provenance.read_text())
    assert entry["numbers"] == coverage.numbers()
    change, named = DAMAGES[damage]
    provenance.write_text(change(entry) + "\n")
    before = {p.name: p.read_bytes() for p in (tmp_path / "old").iterdir()}
    more = ("run.engine=jax", "env.horizon=40", "run.n_seeds=5")
    refused = nslb("run", folder, *more, cwd=tmp_path)
    assert refused.returncode == 2 and len(said(refused.stderr)) == 1, refused.stderr
    assert f"made by {coverage.numbers()}: theirs by {named};" in refused.stderr
    assert {p.name: p.read_bytes() for p in (tmp_path / "old").iterdir()} == before
    again = nslb("run", folder, *more, "run.overwrite=true", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert len(list((tmp_path / "old").glob("seed=*.csv"))) == 5


@pytest.mark.slow  # the JAX engine's machinery on a CPU: make test-full
def test_a_jax_run_stopped_while_writing_is_resumed(tmp_path: Path) -> None:
    """Ctrl-C once the first seed files of a batch are on disk: the seeds a stopped writer
    left are recorded in provenance.jsonl (its line is written before the batch), so the
    next run adds the others instead of refusing them as of unknown numbers."""
    import signal
    import subprocess
    import time

    from tests.helpers.cli import NSLB

    run = ["run", "run.engine=jax", "agent=random", "env.horizon=300", "run.batch_size=600",
           "run.progress=false", f"hydra.run.dir={tmp_path / 'r'}"]  # fmt: skip
    writer = subprocess.Popen([NSLB, *run, "run.n_seeds=600"], cwd=tmp_path, text=True,
                              stderr=subprocess.PIPE)  # fmt: skip
    while writer.poll() is None and not list((tmp_path / "r").glob("seed=*.csv")):
        time.sleep(0.005)
    writer.send_signal(signal.SIGINT)
    writer.communicate(timeout=120)
    again = nslb(*run, "run.n_seeds=650", cwd=tmp_path)  # more: the check of the folder runs
    assert again.returncode == 0, again.stderr
    assert len(list((tmp_path / "r").glob("seed=*.csv"))) == 650


PRIOR, FOUR_STATES = (
    SyntheticParams(model="prior", horizon=60),
    SyntheticParams(n_states=4, horizon=60),
)
IN_CI = ("mts", FOUR_STATES)  # a filter; every agent, on both worlds, with make test-full


@pytest.mark.parametrize(
    ("name", "env"),
    [pytest.param(name, env, marks=() if (name, env) == IN_CI else pytest.mark.slow)
     for env in (FOUR_STATES, PRIOR) for name in own()],
)  # fmt: skip  # slow: five programs of their own each
def test_a_seed_plays_the_same_rounds_alone_and_in_any_batch(
    name: str, env: SyntheticParams
) -> None:
    """The same numbers to the last bit (its keys are its seed's), alone, padded, and in
    batches whose devices hold one or several lanes each: with one lane on a device, XLA
    summed mTS's filter in another order (seen as different files for a sweep's job)."""
    params = AGENTS[name].Params()
    batch, *others = run_apart(
        lambda: [simulate_seeds(env, params, np.array(seeds), size)
                 for seeds, size in (([2, 7, 11, 30], 4), ([7], 1), ([7], 3), ([7, 9], 2),
                                     ([5, 7, 8, 9, 10, 11], 6))],
        "the JAX engine",
    )  # fmt: skip
    for trace in others:
        at = list(trace.seeds).index(7)
        for column in ("action", "reward", "expected_reward", "state", "belief", "p_true_state"):
            np.testing.assert_array_equal(getattr(trace, column)[at], getattr(batch, column)[1])


@pytest.mark.parametrize(
    ("name", "env"),  # slow: umTS's program, a thousand lanes of 100 particles each
    [("mts", SyntheticParams(horizon=100)),
     pytest.param("umts", SyntheticParams(model="prior", horizon=100), marks=pytest.mark.slow)],
)  # fmt: skip
def test_a_seed_plays_the_same_rounds_in_a_batch_of_a_thousand(
    name: str, env: SyntheticParams
) -> None:
    """To the last bit in a batch of 4 and of 1,000 lanes: with large arrays, XLA's CPU code
    handed fused loops to a library whose exponentials differ in the last bit (seen as
    p_true_state's last digit changing with run.batch_size, resumed runs and sweeps)."""
    params = AGENTS[name].Params()
    few, many = run_apart(
        lambda: [simulate_seeds(env, params, np.arange(n), n) for n in (4, 1000)], "the JAX engine"
    )
    for column in ("action", "reward", "expected_reward", "state", "belief", "p_true_state"):
        np.testing.assert_array_equal(getattr(many, column)[:4], getattr(few, column))


@pytest.mark.parametrize(
    ("override", "named"),
    [("agent=cd_linucb", "agent: cd_linucb runs on the numpy engine only"),
     ("env=movielens", "env: movielens runs on the numpy engine only")],
)  # fmt: skip
def test_what_the_engine_does_not_cover_is_one_line(
    tmp_path: Path, override: str, named: str
) -> None:
    done = nslb("run", "run.engine=jax", override, cwd=tmp_path)
    assert done.returncode != 0
    assert said(done.stderr) == [pytest.approx(said(done.stderr)[0])]
    assert named in done.stderr and "run.engine=jax covers" in done.stderr
    assert not (tmp_path / "outputs").exists()


def test_without_jax_the_engine_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(coverage.importlib.util, "find_spec", lambda name: None)
    refused = coverage.refusal(SyntheticParams(), AGENTS["mts"].Params())
    assert refused is not None and refused[0] == "run.engine" and "[jax]" in refused[1]


@pytest.mark.parametrize(
    "count",  # slow: a negative and a too large count say again, through JAX, what 0 says
    [
        "0",
        pytest.param("-3", marks=pytest.mark.slow),
        "two",
        pytest.param("100000", marks=pytest.mark.slow),
        "99999999999999999999",
    ],
)
def test_a_device_count_in_xla_flags_that_xla_cannot_start_with_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, count: str
) -> None:
    flag = f"--xla_force_host_platform_device_count={count}"
    monkeypatch.setenv("XLA_FLAGS", f"--xla_cpu_multi_thread_eigen=false {flag}")
    done = nslb("run", "run.engine=jax", *SMALL, cwd=tmp_path)
    assert done.returncode != 0
    assert said(done.stderr) == [pytest.approx(said(done.stderr)[0])]
    assert flag in done.stderr and "XLA_FLAGS" in done.stderr
    assert not (tmp_path / "outputs").exists()


def test_a_horizon_beyond_float64s_exact_counts_is_one_line(tmp_path: Path) -> None:
    """A horizon of 2^63 - 1 kept in one row once wrote a row of zeros and exit status 0
    (the loop's bounds overflowed); counts in float64 stop growing at 2^53 anyway."""
    done = nslb("run", "run.engine=jax", "run.n_seeds=2", f"env.horizon={2**63 - 1}",
                f"run.every={2**63 - 1}", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 2 and said(done.stderr) == [pytest.approx(said(done.stderr)[0])]
    assert "env.horizon" in done.stderr and "lower env.horizon" in done.stderr
    assert not (tmp_path / "outputs").exists()


@pytest.mark.slow  # the JAX engine's machinery on a CPU: make test-full
def test_a_detecting_agent_records_when_it_detects_on_the_jax_engine_too() -> None:
    """As on the default engine (design §6): one round per detection, scored against the
    true changes of the fixed path (a change every 200 rounds)."""
    env = SyntheticParams(dynamics="fixed")
    params = AGENTS["cd_ucb"].Params()
    summary = run_apart(lambda: simulate_seeds(env, params, np.arange(20), 20), "JAX").summary
    assert [len(r) for r in summary["detection_rounds"]] == list(summary["detections"])
    assert summary["detections"].sum() > 20
    delays = [d for run in summary["detection_delays"] for d in run]
    assert len(delays) + summary["false_alarms"].sum() == summary["detections"].sum()
    assert min(delays) >= 0 and max(delays) < 200


def test_after_the_jax_engine_a_process_refuses_to_fork_in_one_line() -> None:
    """JAX's compiler threads would hang a forked child that compiles: nslb says so instead
    (in a child here, so that this test's process can still fork)."""

    def after_jax() -> str:
        forbid_forks("the JAX engine")
        try:
            run_apart(lambda: 1, "a plugin's job")
        except Ended as err:
            return str(err)
        return "forked"

    said_there = run_apart(after_jax, "the test")
    assert said_there.startswith("a plugin's job cannot run in a process of its own after the JAX")


@pytest.mark.slow  # in CI: the kept rows of a thinned program (tests/jax_engine/test_thinning.py)
def test_rounds_thinned_on_the_device_are_the_rows_a_full_run_writes(tmp_path: Path) -> None:
    """run.every=7 keeps rounds 7, 14, …, 98 and 100 on the device, with the cumulative
    columns summed there over every round: the lines are those of run.every=1, byte for
    byte, and the detections (scored on the whole path) the same."""
    for every in (1, 7):
        job = ("agent=cd_ts", "run.engine=jax", "env.horizon=100", "run.n_seeds=3")
        done = nslb("run", *job, f"run.every={every}", f"hydra.run.dir={tmp_path / str(every)}",
                    cwd=tmp_path)  # fmt: skip
        assert done.returncode == 0, done.stderr
    for seed in range(3):
        full = (tmp_path / f"1/seed={seed}.csv").read_text().splitlines()
        thin = (tmp_path / f"7/seed={seed}.csv").read_text().splitlines()
        assert thin == [full[0], *(full[t] for t in [*range(7, 100, 7), 100])]
        detected = [json.loads((tmp_path / f"{e}/seed={seed}.json").read_text()) for e in (1, 7)]
        assert detected[0]["detection_rounds"] == detected[1]["detection_rounds"]
