"""A batch cut into parts simulated in threads (nslb_cli.runner.parts): the parts' worlds are
the worlds of their seeds alone, and the joined trace is the whole batch's, byte for byte."""

from __future__ import annotations

import dataclasses
import os
import signal
import threading
import time
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest

from nslb_cli.agents import AGENTS
from nslb_cli.agents.base import Agent
from nslb_cli.bandit.trace import Trace
from nslb_cli.bandit.world import World
from nslb_cli.common.stopping import Terminated, request
from nslb_cli.envs import ENVIRONMENTS
from nslb_cli.envs.synthetic import SyntheticParams
from nslb_cli.runner import parts
from nslb_cli.runner.config import RunConfig, RunSettings
from nslb_cli.runner.job import simulate_seeds
from tests.helpers.movielens import tiny_env_params

SEEDS = np.arange(20, 37)  # 17 runs: parts of unequal sizes


def assert_same_arrays(one: object, other: object) -> None:
    """Every array field of two dataclasses (and of those inside them) is equal, NaN included."""
    for field in dataclasses.fields(one):  # type: ignore[arg-type]
        a, b = getattr(one, field.name), getattr(other, field.name)
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(a, b, err_msg=field.name)
        elif dataclasses.is_dataclass(a):
            assert_same_arrays(a, b)
        elif isinstance(a, dict):  # a trace's summary: per-run arrays
            assert a.keys() == b.keys(), field.name
            for key, values in a.items():
                np.testing.assert_array_equal(values, b[key], err_msg=key)
        else:
            assert a == b, field.name


def worlds(tmp_path: Path) -> dict[str, tuple[str, object]]:
    return {
        "synthetic, priors": ("synthetic", SyntheticParams(model="prior", horizon=60)),
        "synthetic, Bernoulli": ("synthetic", SyntheticParams(reward="bernoulli", horizon=60)),
        "movielens (contexts)": ("movielens", tiny_env_params(tmp_path, horizon=60)),
    }


@pytest.mark.parametrize(
    "kind", ["synthetic, priors", "synthetic, Bernoulli", "movielens (contexts)"]
)
def test_a_part_of_a_world_is_the_world_of_its_seeds_alone(kind: str, tmp_path: Path) -> None:
    name, params = worlds(tmp_path)[kind]
    build = ENVIRONMENTS[name].build
    whole: World = build(params, SEEDS)
    for runs in (slice(0, 5), slice(5, 17), slice(16, 17)):
        assert_same_arrays(whole.part(runs), build(params, SEEDS[runs]))


@pytest.mark.parametrize("agent", ["umts", "mts", "cusum_ucb"])
def test_a_batch_played_in_parts_gives_the_whole_batch_trace(agent: str) -> None:
    env = SyntheticParams(model="prior", horizon=120)
    world = ENVIRONMENTS["synthetic"].build(env, SEEDS)
    params = AGENTS[agent].Params()
    whole = parts.simulate_parts(world, AGENTS[agent], params, 1, False)
    for count in (2, 3, 5):
        joined = parts.simulate_parts(world, AGENTS[agent], params, count, progress=False)
        assert_same_arrays(joined, whole)
    np.testing.assert_array_equal(whole.seeds, SEEDS)


def test_only_concurrent_agents_are_cut_and_never_below_the_fewest_runs() -> None:
    umts, mts = AGENTS["umts"], AGENTS["mts"]
    assert umts.concurrent and not mts.concurrent
    assert parts.plan_parts(mts, 4, 100) == 1
    assert parts.plan_parts(umts, 4, 100) == 4
    assert parts.plan_parts(umts, 4, 2 * parts.MIN_RUNS) == 2
    assert parts.plan_parts(umts, 4, parts.MIN_RUNS - 1) == 1


def test_by_default_a_batch_takes_one_thread_per_usable_cpu(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    umts = AGENTS["umts"]
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 2, 5}, raising=False)
    assert parts.plan_parts(umts, None, 1000) == 3, "the CPUs the process may run on"
    assert parts.plan_parts(umts, 2, 1000) == 2, "run.threads is taken as given"
    monkeypatch.delattr(os, "sched_getaffinity")  # a system without affinities
    monkeypatch.setattr(os, "cpu_count", lambda: 6)
    assert parts.plan_parts(umts, None, 1000) == 6


def test_run_threads_decides_the_parts_and_not_the_numbers() -> None:
    env = SyntheticParams(model="prior", horizon=80)
    traces = [
        simulate_seeds(RunConfig("x", env, AGENTS["umts"].Params(), RunSettings(threads=n)), SEEDS)
        for n in (1, 2)
    ]
    assert_same_arrays(traces[0], traces[1])


def test_a_request_to_stop_ends_every_part_and_no_thread_is_left() -> None:
    env = SyntheticParams(model="prior", horizon=80)
    config = RunConfig("x", env, AGENTS["umts"].Params(), RunSettings(threads=2))
    before = threading.active_count()
    with pytest.raises(Terminated):
        request(Terminated("stop"))
    with pytest.raises(Terminated, match="stop"):
        simulate_seeds(config, SEEDS)
    assert threading.active_count() == before


def test_a_joined_trace_keeps_the_order_of_its_parts() -> None:
    def part(first: int, runs: int) -> Trace:
        ids = np.arange(first, first + runs)
        column = np.repeat(ids[:, None], 3, axis=1)
        return Trace(ids, column, column * 1.0, column * 1.0, column * 1.0, column, column,
                     column * 1.0, summary={"resamples": ids})  # fmt: skip

    joined = Trace.joined([part(0, 2), part(2, 3)])
    np.testing.assert_array_equal(joined.seeds, np.arange(5))
    np.testing.assert_array_equal(joined.action[:, 0], np.arange(5))
    np.testing.assert_array_equal(joined.summary["resamples"], np.arange(5))


@dataclasses.dataclass
class FailingParams:
    name: str = "failing"


class FailingInOnePart(Agent):
    """Pulls arm 0; the part of 9 runs fails in round 5, the others note their last round."""

    Params = FailingParams
    concurrent = True
    last_round: ClassVar[dict[int, int]] = {}

    def act(self, t: int, contexts: np.ndarray | None) -> np.ndarray:
        return np.zeros(self.problem.n_runs, dtype=np.int64)

    def update(
        self, t: int, contexts: np.ndarray | None, actions: np.ndarray, rewards: np.ndarray
    ) -> None:
        if self.problem.n_runs == 9 and t == 5:
            raise ValueError("this part fails")
        self.last_round[self.problem.n_runs] = t
        time.sleep(0.0005)


def test_a_failing_part_stops_the_others_and_its_error_is_raised() -> None:
    world = ENVIRONMENTS["synthetic"].build(SyntheticParams(horizon=2000), SEEDS)  # 8 + 9 runs
    with pytest.raises(ValueError, match="this part fails"):
        parts.simulate_parts(world, FailingInOnePart, FailingParams(), 2, False)
    assert FailingInOnePart.last_round[8] < 1000, "the other part gave up, not played on"


class SlowInThreads(FailingInOnePart):
    """Pulls arm 0; slow in the threads started for parts, quick in the caller's."""

    def update(
        self, t: int, contexts: np.ndarray | None, actions: np.ndarray, rewards: np.ndarray
    ) -> None:
        if threading.current_thread().name == "nslb-part":
            time.sleep(0.05)
        self.last_round[self.problem.n_runs] = t


def test_a_signal_while_the_caller_waits_for_the_parts_stops_them_at_once() -> None:
    """Ctrl-C lands while the caller, its own part done, waits for a thread's: it is raised
    within a round, once the thread has ended (its round ends in no update after)."""
    world = ENVIRONMENTS["synthetic"].build(SyntheticParams(horizon=1000), SEEDS)
    SlowInThreads.last_round.clear()
    # Python's own Ctrl-C handler, also where the tests run with SIGINT ignored (started as
    # a shell's background job), which Python keeps ignored
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))  # as Ctrl-C does
    timer.start()
    start = time.perf_counter()
    try:
        with pytest.raises(KeyboardInterrupt):
            parts.simulate_parts(world, SlowInThreads, FailingParams(), 2, False)
    finally:
        signal.signal(signal.SIGINT, before)
    seen = dict(SlowInThreads.last_round)
    assert time.perf_counter() - start < 1.5, "stopped soon after the signal"
    assert min(seen.values()) < 100, "the thread's part gave up"
    time.sleep(0.1)
    assert SlowInThreads.last_round == seen, "no thread plays on"
    timer.join()


def play_recorded(count: int, monkeypatch: pytest.MonkeyPatch) -> list[threading.Thread]:
    """Play 32 umTS runs in ``count`` parts, each taking at least 0.2 s; the thread that
    played each part, in the order they started. The joined trace is the one thread's,
    byte for byte."""
    env = SyntheticParams(model="prior", horizon=60)
    world = ENVIRONMENTS["synthetic"].build(env, np.arange(32))
    umts = AGENTS["umts"]
    whole = parts.simulate_parts(world, umts, umts.Params(), 1, False)
    players: list[threading.Thread] = []  # the threads kept: an ident may be reused
    play = parts.simulate

    def recorded(*args: object, **kwargs: object) -> Trace:
        players.append(threading.current_thread())
        time.sleep(0.2)
        return play(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(parts, "simulate", recorded)
    assert_same_arrays(parts.simulate_parts(world, umts, umts.Params(), count, False), whole)
    return players


def test_every_part_has_a_thread_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    players = play_recorded(3, monkeypatch)
    assert len(set(players)) == 3 and threading.current_thread() in players


def test_the_progress_bar_names_the_part_it_shows(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two parts (0.2 s each) in two threads: only the caller's shows a bar. Played by the
    caller alone (no thread to be had), each restart of its bar says which part it is."""
    world = ENVIRONMENTS["synthetic"].build(SyntheticParams(horizon=60), np.arange(24))
    mts = AGENTS["mts"]
    play = parts.simulate

    def slow(*args: object, **kwargs: object) -> Trace:
        time.sleep(0.2)  # the other thread takes the other part meanwhile
        return play(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(parts, "simulate", slow)
    parts.simulate_parts(world, mts, mts.Params(), 2, True)
    shown = capsys.readouterr().err
    assert ("part 1 of 2" in shown) != ("part 2 of 2" in shown), "the caller's part"
    refuse_part_threads(0, monkeypatch)
    parts.simulate_parts(world, mts, mts.Params(), 3, True)
    shown = capsys.readouterr().err
    assert [f"part {k} of 3" in shown for k in (1, 2, 3)] == [True] * 3


def refuse_part_threads(allowed: int, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Make the system refuse every part thread after the first ``allowed`` (as a process
    limit would: ``RuntimeError`` from ``start``); the names of the refused, one per try."""
    start, refused = threading.Thread.start, []
    started = [0]

    def limited(self: threading.Thread) -> None:
        if self.name == "nslb-part":
            if started[0] >= allowed:
                refused.append(self.name)
                raise RuntimeError("can't start new thread")
            started[0] += 1
        start(self)

    monkeypatch.setattr(threading.Thread, "start", limited)
    return refused


@pytest.mark.parametrize(
    ("allowed", "count", "threads"),
    [
        (0, 2, 1),  # none at all: the caller's thread plays both parts
        (0, 3, 1),  # none of two: the caller plays all three parts
        (1, 4, 2),  # one of three: it and the caller play the four parts
    ],
)
def test_a_batch_is_played_by_the_threads_the_system_gives(
    allowed: int, count: int, threads: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No error of ``start`` (nor of joining a thread never started) replaces the batch's
    trace, which is the one thread's, byte for byte."""
    refused = refuse_part_threads(allowed, monkeypatch)
    players = play_recorded(count, monkeypatch)
    assert len(players) == count and len(set(players)) == threads
    assert len(refused) == 1, "a thread was refused, and the batch did not ask again"
    assert threading.current_thread() in players


def test_a_failing_part_s_error_is_raised_though_a_thread_was_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    refuse_part_threads(0, monkeypatch)
    world = ENVIRONMENTS["synthetic"].build(SyntheticParams(horizon=2000), SEEDS)
    with pytest.raises(ValueError, match="this part fails"):
        parts.simulate_parts(world, FailingInOnePart, FailingParams(), 2, False)


@pytest.mark.parametrize("cut", [1, 2])  # the first thread, the second
def test_a_stop_request_inside_a_thread_s_start_leaves_no_thread_playing(
    cut: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C lands while ``start`` waits for the new thread to run: the request is raised
    and the thread, started all the same, is joined before it is."""
    start, started = threading.Thread.start, [0]

    def interrupted(self: threading.Thread) -> None:
        start(self)
        if self.name == "nslb-part":
            started[0] += 1
            if started[0] == cut:
                raise KeyboardInterrupt

    monkeypatch.setattr(threading.Thread, "start", interrupted)
    with pytest.raises(KeyboardInterrupt):
        play_recorded(3, monkeypatch)
    assert not [t for t in threading.enumerate() if t.name == "nslb-part" and t.is_alive()]
