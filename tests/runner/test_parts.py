"""A batch cut into parts simulated in threads (nslb_cli.runner.parts): the parts' worlds are
the worlds of their seeds alone, and the joined trace is the whole batch's, byte for byte."""

from __future__ import annotations

import dataclasses
import threading
import time
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest

from nslb_cli.agents import AGENTS
from nslb_cli.agents.base import Agent
from nslb_cli.config.stopping import Terminated, request
from nslb_cli.core.trace import Trace
from nslb_cli.core.world import World
from nslb_cli.envs import ENVIRONMENTS
from nslb_cli.envs.synthetic import SyntheticParams
from nslb_cli.runner import parts
from nslb_cli.runner.compose import RunConfig, RunSettings
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
    whole = parts.simulate_parts(world, AGENTS[agent], params, parts.Plan.even(1), False)
    for plan in (parts.Plan.even(2), parts.Plan.even(3), parts.Plan(2, 1, 1), parts.Plan(5, 2, 3)):
        joined = parts.simulate_parts(world, AGENTS[agent], params, plan, progress=False)
        assert_same_arrays(joined, whole)
    np.testing.assert_array_equal(whole.seeds, SEEDS)


def test_only_concurrent_agents_are_cut_and_never_below_the_fewest_runs() -> None:
    umts, mts = AGENTS["umts"], AGENTS["mts"]
    assert umts.concurrent and not mts.concurrent
    assert parts.part_count(mts, 4, 100) == 1
    assert parts.part_count(umts, 4, 100) == 4
    assert parts.part_count(umts, 4, 2 * parts.MIN_RUNS) == 2
    assert parts.part_count(umts, 4, parts.MIN_RUNS - 1) == 1
    assert 1 <= parts.part_count(umts, None, 1000) <= len(parts.usable_cpus())


def test_by_default_a_batch_takes_only_the_idle_cpus(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two CPUs, one busy with another process over the look: one part, not two."""
    umts = AGENTS["umts"]
    monkeypatch.setattr(parts, "usable_cpus", lambda: {0, 1})
    monkeypatch.setattr(parts, "LOOK_KEPT", 0.0)  # every call looks afresh
    monkeypatch.setattr(parts, "_own_cpu", lambda: 0.0)  # this process idle meanwhile
    looks = {
        "one busy": [(1000, 4000), (1000 + 100, 4000 + 200)],  # busy 100 of 200 ticks
        "both idle": [(1000, 4000), (1000, 4200)],
        "both busy": [(1000, 4000), (1200, 4200)],
    }
    ticks = iter(looks["one busy"])
    monkeypatch.setattr(parts, "_cpu_times", lambda cpus: next(ticks))
    assert parts.idle_cpus() == 1
    ticks = iter(looks["one busy"])
    assert parts.part_count(umts, None, 100) == 1
    ticks = iter(looks["both idle"])
    assert parts.part_count(umts, None, 100) == 2
    ticks = iter(looks["both busy"])  # still one part
    assert parts.part_count(umts, None, 100) == 1
    assert parts.part_count(umts, 2, 100) == 2, "run.threads is taken as given"


@pytest.fixture(autouse=True)
def no_look_started(monkeypatch: pytest.MonkeyPatch) -> None:
    """No look begun by a command run earlier in this process."""
    monkeypatch.setattr(parts, "_started", None)


def test_a_look_begun_at_the_command_start_is_not_waited_for(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The first batch measures from :func:`parts.start_look`, without sleeping, when that
    was LOOK to LOOK_KEPT seconds ago; otherwise, and for the next look, it waits LOOK."""
    monkeypatch.setattr(parts, "usable_cpus", lambda: {0, 1})
    monkeypatch.setattr(parts, "cpu_quota", lambda: None)
    clock = [100.0]
    monkeypatch.setattr(parts.time, "monotonic", lambda: clock[0])
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        clock[0] += seconds

    monkeypatch.setattr(parts.time, "sleep", sleep)
    ticks = {100.0: (1000, 4000), 101.0: (1000 + 100, 4000 + 200)}  # one of two CPUs busy
    monkeypatch.setattr(parts, "_cpu_times", lambda cpus: ticks.get(clock[0], (0, 0)))
    monkeypatch.setattr(parts, "_own_cpu", lambda: 5.0)  # another process is the busy one
    parts.start_look()
    clock[0] = 101.0  # the batch starts a second later
    assert parts._look() == 1 and slept == [], "measured since the start"
    clock[0] = 101.0 + parts.LOOK_KEPT
    parts._look()
    assert slept == [parts.LOOK], "a look of its own: the start's is used once"
    parts.start_look()
    clock[0] += parts.LOOK / 2  # too soon to tell
    parts._look()
    assert slept == [parts.LOOK, parts.LOOK]


def test_a_recent_look_at_the_cpus_stands_for_the_next_batches(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    looks = iter([1, 2])
    monkeypatch.setattr(parts, "_look", lambda: next(looks))
    monkeypatch.setattr(parts, "_last_look", None)
    assert [parts.idle_cpus() for _ in range(5)] == [1] * 5, "one look for close batches"
    monkeypatch.setattr(parts, "LOOK_KEPT", 0.0)
    assert parts.idle_cpus() == 2, "an old look is taken again"


def test_a_batch_too_small_to_cut_does_not_look_at_the_cpus(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def looked() -> int:
        raise AssertionError("a batch of one part needs no look")

    monkeypatch.setattr(parts, "idle_cpus", looked)
    assert parts.part_count(AGENTS["umts"], None, 2 * parts.MIN_RUNS - 1) == 1
    assert parts.part_count(AGENTS["mts"], None, 1000) == 1


@pytest.mark.parametrize(
    ("files", "quota"),
    [
        ({"cpu.max": "max 100000\n"}, None),
        ({"cpu.max": "150000 100000\n"}, 1.5),
        ({"cpu/cpu.cfs_quota_us": "-1\n", "cpu/cpu.cfs_period_us": "100000\n"}, None),
        ({"cpu/cpu.cfs_quota_us": "50000\n", "cpu/cpu.cfs_period_us": "100000\n"}, 0.5),
        ({}, None),
    ],
)
def test_a_containers_cpu_quota_is_read_from_its_cgroup(
    files: dict[str, str], quota: float | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    monkeypatch.setattr(parts, "CGROUP", tmp_path)
    assert parts.cpu_quota() == quota


def test_a_quota_of_one_cpu_gives_one_part_on_an_idle_machine(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(parts, "usable_cpus", lambda: {0, 1, 2, 3})
    ticks = iter([(1000, 4000), (1000, 4400)])  # all four idle
    monkeypatch.setattr(parts, "_cpu_times", lambda cpus: next(ticks))
    monkeypatch.setattr(parts, "cpu_quota", lambda: 1.0)
    monkeypatch.setattr(parts, "_own_cpu", lambda: 0.0)
    assert parts._look() == 1


def test_this_process_own_spinning_threads_are_not_another_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Both CPUs half busy over the look, all of it this process's (a library's threads
    spinning after their work): both count as idle."""
    monkeypatch.setattr(parts, "usable_cpus", lambda: {0, 1})
    monkeypatch.setattr(parts, "cpu_quota", lambda: None)
    ticks = iter([(1000, 4000), (1100, 4200)])  # one CPU's worth busy
    monkeypatch.setattr(parts, "_cpu_times", lambda cpus: next(ticks))
    own = iter([10.0, 10.0 + parts.LOOK])  # one CPU's worth, ours
    monkeypatch.setattr(parts, "_own_cpu", lambda: next(own))
    monkeypatch.setattr(parts.time, "monotonic", lambda: 0.0)
    assert parts._look() == 2


def test_the_cpu_times_are_read_for_the_usable_cpus_only() -> None:
    cpus = parts.usable_cpus()
    times = parts._cpu_times(cpus)
    if times is None:
        pytest.skip("no /proc/stat here")
    busy, total = times
    assert 0 <= busy <= total
    one = parts._cpu_times({min(cpus)})
    assert one is not None and one[1] <= total


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
        parts.simulate_parts(world, FailingInOnePart, FailingParams(), parts.Plan.even(2), False)
    assert FailingInOnePart.last_round[8] < 1000, "the other part gave up, not played on"


def test_a_batch_started_beside_other_work_is_cut_finer_to_grow_later(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    umts = AGENTS["umts"]
    monkeypatch.setattr(parts, "usable_cpus", lambda: {0, 1})
    monkeypatch.setattr(parts, "cpu_quota", lambda: None)
    idle = [1]
    monkeypatch.setattr(parts, "idle_cpus", lambda: idle[0])
    busy = parts.plan_parts(umts, None, 100)
    assert busy == parts.Plan(parts.PARTS_PER_CPU * 2, 1, 2)
    assert 100 // busy.parts >= parts.MIN_RUNS
    assert parts.plan_parts(umts, None, 20) == parts.Plan(2, 1, 2), "no part under MIN_RUNS"
    idle[0] = 2
    assert parts.plan_parts(umts, None, 100) == parts.Plan.even(2), "all idle: as many as CPUs"
    idle[0] = 1
    assert parts.plan_parts(umts, 3, 100) == parts.Plan.even(3), "run.threads is taken as given"
    assert parts.plan_parts(AGENTS["mts"], None, 100) == parts.Plan.even(1)
    monkeypatch.setattr(parts, "cpu_quota", lambda: 1.0)
    assert parts.plan_parts(umts, None, 100) == parts.Plan.even(1), "a quota of one CPU"


@pytest.mark.parametrize(
    ("spare", "plan", "threads"),
    [
        (1, parts.Plan(4, 1, 2), [1, 2, 2, 2]),  # a CPU falls idle: a second thread joins
        (0, parts.Plan(4, 1, 2), [1, 1, 1, 1]),  # none does: one thread plays all
        (-1, parts.Plan(4, 2, 3), [1, 2, 2, 2]),  # another process took one: one retires
    ],
)
def test_threads_join_and_retire_with_idle_cpus_and_the_numbers_stay(
    spare: int, plan: parts.Plan, threads: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each part takes 0.3 s, six looks (GROW_EVERY 0.05 s); ``threads``: how many threads
    had played when each part started."""
    players = play_recorded(plan, lambda playing: spare, monkeypatch)
    assert [len(set(players[: k + 1])) for k in range(len(players))] == threads
    if spare < 0:
        assert players[2] == players[3], "the last parts by the one thread left"


def play_recorded(
    plan: parts.Plan, spare: object, monkeypatch: pytest.MonkeyPatch
) -> list[threading.Thread]:
    """Play 32 umTS runs with ``plan``, each part taking 0.3 s and a look every 0.05 s whose
    answer is ``spare(playing)``; the thread that played each part, in the order they
    started. The joined trace is the one thread's, byte for byte."""
    env = SyntheticParams(model="prior", horizon=60)
    world = ENVIRONMENTS["synthetic"].build(env, np.arange(32))
    umts = AGENTS["umts"]
    whole = parts.simulate_parts(world, umts, umts.Params(), parts.Plan.even(1), False)
    players: list[threading.Thread] = []  # the threads kept: an ident may be reused
    play = parts.simulate

    def recorded(*args: object, **kwargs: object) -> Trace:
        players.append(threading.current_thread())
        time.sleep(0.3)
        return play(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(parts, "simulate", recorded)
    monkeypatch.setattr(parts._IdleWatch, "spare", lambda self, playing: spare(playing))  # type: ignore[operator]
    monkeypatch.setattr(parts, "GROW_EVERY", 0.05)
    assert_same_arrays(parts.simulate_parts(world, umts, umts.Params(), plan, False), whole)
    return players


def test_a_batch_grows_again_after_a_thread_retired(monkeypatch: pytest.MonkeyPatch) -> None:
    """Another process takes a CPU (one of two threads retires), then leaves all three CPUs
    idle: threads join up to the most the plan allows, three playing at once, though two
    had been started already."""
    alone = [False]

    def spare(playing: int) -> int:
        alone[0] = alone[0] or playing == 1
        return 3 - playing if alone[0] else -1

    players = play_recorded(parts.Plan(6, 2, 3), spare, monkeypatch)
    assert len(set(players)) == 4, "the retired thread's place and the third CPU taken"


def test_a_crowded_look_with_one_thread_does_not_retire_the_next(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Looks that find the CPUs crowded while one thread plays (it cannot retire) are
    forgotten once a CPU falls idle: the thread that joins then plays, not retires."""
    looks = iter([-1, -1, -1])

    def spare(playing: int) -> int:
        return next(looks, 1)

    players = play_recorded(parts.Plan(4, 1, 2), spare, monkeypatch)
    assert len(set(players)) == 2, "the joining thread played parts"


def test_a_look_for_a_spare_cpu_leaves_out_this_batch_s_players(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(parts, "usable_cpus", lambda: {0, 1})
    monkeypatch.setattr(parts, "cpu_quota", lambda: None)
    clock = [0.0]
    monkeypatch.setattr(parts.time, "monotonic", lambda: clock[0])
    ticks = {0.0: (0, 0), 0.25: (50, 100), 0.5: (150, 200), 0.75: (250, 300), 0.76: (251, 302)}
    own = {0.0: 0.0, 0.25: 0.25, 0.5: 0.5, 0.75: 0.75, 0.76: 0.76}  # one CPU's worth: ours
    monkeypatch.setattr(parts, "_cpu_times", lambda cpus: ticks[clock[0]])
    monkeypatch.setattr(parts, "_own_cpu", lambda: own[clock[0]])
    monkeypatch.setattr(parts, "_last_look", (0.0, 0))  # an older look: none idle
    watch = parts._IdleWatch()
    clock[0] = 0.25  # half of two CPUs busy, all of it ours: the other CPU is spare
    assert watch.spare(playing=1) == 1
    assert parts.idle_cpus() == 2, "the next batch knows both CPUs are free of others"
    clock[0] = 0.5  # both busy, one of them by another process
    assert watch.spare(playing=1) == 0
    clock[0] = 0.75  # the same, seen with two players of ours: one too many
    assert watch.spare(playing=2) == -1
    clock[0] = 0.76  # too short a span to tell
    assert watch.spare(playing=1) is None


def test_a_crowded_look_followed_by_a_full_one_retires_no_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Another process takes a CPU for one look and leaves before any part ends: the next
    looks find the CPUs exactly used, so the two threads play on and no third joins."""
    looks = iter([-1])

    def spare(playing: int) -> int:
        return next(looks, 2 - playing)

    players = play_recorded(parts.Plan(8, 2, 3), spare, monkeypatch)
    assert len(set(players)) == 2, "no thread retired, so none had to join"


def test_the_progress_bar_names_the_part_it_shows(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """One thread plays a batch's three parts one after another: each restart of its bar says
    which part it is. Two threads with a part each (0.2 s a part): the second shows none."""
    world = ENVIRONMENTS["synthetic"].build(SyntheticParams(horizon=60), np.arange(24))
    mts = AGENTS["mts"]
    parts.simulate_parts(world, mts, mts.Params(), parts.Plan(3, 1, 1), True)
    shown = capsys.readouterr().err
    assert [f"part {k} of 3" in shown for k in (1, 2, 3)] == [True] * 3
    play = parts.simulate

    def slow(*args: object, **kwargs: object) -> Trace:
        time.sleep(0.2)  # the other thread takes the other part meanwhile
        return play(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(parts, "simulate", slow)
    parts.simulate_parts(world, mts, mts.Params(), parts.Plan.even(2), True)
    shown = capsys.readouterr().err
    assert ("part 1 of 2" in shown) != ("part 2 of 2" in shown), "the first thread's part"


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
    ("allowed", "plan", "threads"),
    [
        (0, parts.Plan.even(2), 1),  # none at all: the caller's thread plays both parts
        (1, parts.Plan.even(3), 1),  # one of three: it plays all three parts
        (1, parts.Plan(4, 1, 2), 1),  # a CPU falls idle but no thread is to be had
        (2, parts.Plan(4, 1, 3), 2),  # one joins, the next is refused
    ],
)
def test_a_batch_is_played_by_the_threads_the_system_gives(
    allowed: int, plan: parts.Plan, threads: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No error of ``start`` (nor of joining a thread never started) replaces the batch's
    trace, which is the one thread's, byte for byte."""
    refused = refuse_part_threads(allowed, monkeypatch)
    players = play_recorded(plan, lambda playing: 1, monkeypatch)
    assert len(set(players)) == threads
    assert len(refused) == 1, "a thread was refused, and the batch did not ask again"
    if allowed == 0:
        assert set(players) == {threading.current_thread()}


def test_a_failing_part_s_error_is_raised_though_a_thread_was_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    refuse_part_threads(1, monkeypatch)
    world = ENVIRONMENTS["synthetic"].build(SyntheticParams(horizon=2000), SEEDS)
    with pytest.raises(ValueError, match="this part fails"):
        parts.simulate_parts(world, FailingInOnePart, FailingParams(), parts.Plan.even(2), False)


@pytest.mark.parametrize("cut", [1, 2])  # the first player, a player that joins later
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
        play_recorded(parts.Plan(4, 1, 2), lambda playing: 1, monkeypatch)
    assert not [t for t in threading.enumerate() if t.name == "nslb-part" and t.is_alive()]
