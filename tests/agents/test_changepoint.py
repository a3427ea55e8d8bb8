"""CD-UCB and CD-TS: forced exploration, global restarts, detections in the summary, and the
compiled rounds against their numpy statement."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from nslb_cli.agents import AGENTS
from nslb_cli.agents.changepoint import plan_sum, window_shift
from nslb_cli.agents.detectors import cao_threshold
from nslb_cli.agents.tuning import cao_exploration
from nslb_cli.bandit.numerics import pairwise_plan
from nslb_cli.bandit.rng import BatchRNG
from nslb_cli.common.errors import ConfigError
from nslb_cli.envs.synthetic import SyntheticParams
from nslb_cli.runner.simulate import build_agent
from tests.helpers.agents import agent_params, run_agent
from tests.helpers.reference_kernels import reference_act, reference_update
from tests.helpers.worlds import hand_made_world, synthetic_world


@pytest.mark.parametrize("name", ["cd_ucb", "cd_ts"])
def test_forced_exploration_follows_caos_schedule(name: str) -> None:
    # gamma = 0.5 and K = 5: period floor(K / gamma) = 10, arm k forced at rounds = k mod 10
    # (no restart happens with an unreachable threshold).
    trace = run_agent(name, [0, 1], SyntheticParams(horizon=300), gamma=0.5, threshold=1e9)
    t = np.arange(300)
    forced = t % 10 < 5
    np.testing.assert_array_equal(
        trace.action[:, forced], np.broadcast_to(t[forced] % 10, (2, 150))
    )


@pytest.mark.parametrize("name", ["cd_ucb", "cd_ts"])
def test_a_jump_of_the_played_arm_restarts_every_arm(name: str) -> None:
    # Arm 4 is best by 0.7, so by round 500 it has a full window (tau = 100) and is pulled
    # in nearly every round. Its mean jumps by +5 at round 500, so it stays the arm played
    # (a jump of all arms could move the play to an arm with few pre-change rewards, whose
    # window cannot show the change: M-UCB's detector then never fires). With b = 30 (6 sd of the
    # statistic: no false alarm before the jump, P < 1e-8 per test), k shifted rewards give
    # a statistic of mean 5 k and sd 5: at k = 15 it is 9 sd above b, so every run detects
    # within 30 rounds of the jump. The restart is global: afterwards the pull counts cover
    # exactly the rounds since the restart.
    runs, horizon, jump = 20, 600, 500
    means = np.array([[0.0, 0.1, 0.2, 0.3, 1.0]])
    states = np.zeros((runs, horizon), dtype=np.int64)
    world = hand_made_world(means, states, means, sigma=0.5, seed=5)
    shifted = world.mean_rewards.copy()
    shifted[:, jump:, 4] += 5.0
    world = replace(world, mean_rewards=shifted)
    params = agent_params(name, threshold=30.0)
    agent = build_agent(AGENTS[name], params, world, BatchRNG(range(runs)))
    restarts = np.zeros(runs, dtype=np.int64)  # counted from the outside: rounds whose
    for t in range(horizon):  # statistics were wiped after the update
        actions = agent.act(t, None)
        agent.update(t, None, actions, world.reward(t, actions))
        restarts += agent.pulls.sum(axis=1) == 0
        if t == jump - 1:
            assert np.all(agent.detections == 0)
        if t == jump + 30:
            assert np.all(agent.detections == 1)
            assert np.all(agent.restart > jump)
        np.testing.assert_array_equal(agent.pulls.sum(axis=1), t + 1 - agent.restart)
    np.testing.assert_array_equal(agent.summary()["detections"], restarts)


def test_defaults_are_the_papers_detector_without_forced_exploration() -> None:
    world = synthetic_world([0])
    agent = build_agent(AGENTS["cd_ucb"], agent_params("cd_ucb"), world, BatchRNG([0]))
    assert agent.detector.tau == 100
    assert agent.detector.threshold == cao_threshold(world.problem, 100)
    assert agent.period.tolist() == [0]


def test_null_gamma_is_caos_exploration() -> None:
    # sqrt(K L log n / n) with L = 1 + 0.005 * 2000 = 11 segments: 0.44, period floor(5 / 0.44).
    world = synthetic_world([0])
    gamma = cao_exploration(world.problem, world.offline_model)
    assert gamma[0] == pytest.approx(np.sqrt(5 * 11 * np.log(2000) / 2000))
    agent = build_agent(AGENTS["cd_ts"], agent_params("cd_ts", gamma=None), world, BatchRNG([0]))
    assert agent.period.tolist() == [int(5 // gamma[0])]


def test_ucb_index_pulls_every_arm_once_then_the_best_mean() -> None:
    # Nearly noise-free, one arm clearly best: UCB1 pulls the arms in order, then the best.
    means = np.array([[0.1, 0.9, 0.2]])
    world = hand_made_world(means, np.zeros((1, 50), dtype=np.int64), means, sigma=1e-3)
    agent = build_agent(AGENTS["cd_ucb"], agent_params("cd_ucb"), world, BatchRNG([0]))
    actions = []
    for t in range(50):
        a = agent.act(t, None)
        agent.update(t, None, a, world.reward(t, a))
        actions.append(int(a[0]))
    assert actions[:3] == [0, 1, 2]
    assert actions[-10:] == [1] * 10


@pytest.mark.parametrize(
    ("overrides", "key"),
    [
        ({"tau": 99}, "tau"),
        ({"tau": 0}, "tau"),
        ({"threshold": 0.0}, "threshold"),
        ({"gamma": 1.5}, "gamma"),
        ({"gamma": -0.1}, "gamma"),
    ],
)
@pytest.mark.parametrize("name", ["cd_ucb", "cd_ts"])
def test_invalid_parameters_name_the_field(name: str, overrides: dict, key: str) -> None:
    with pytest.raises(ConfigError, match=f"^{key}:"):
        agent_params(name, **overrides)


def test_bernoulli_rewards_use_the_sub_gaussian_constant_one_half() -> None:
    """Clicks: the detector threshold and the UCB radius take sigma = 1/2 (env.sigma is the
    Gaussian noise and plays no part)."""
    world = synthetic_world([0], reward="bernoulli", sigma=2.0)
    agent = build_agent(AGENTS["cd_ucb"], agent_params("cd_ucb"), world, BatchRNG([0]))
    assert agent.problem.sigma == 0.5
    assert agent.detector.threshold == pytest.approx(0.5 * np.sqrt(50 * np.log(2 * 5 * 2000**2)))


def test_cd_ts_on_clicks_is_beta_bernoulli_thompson_sampling() -> None:
    """Arm 0 clicked twice in two pulls, arm 1 never pulled: Beta(3, 1) against Beta(1, 1)
    picks arm 0 with probability E[X] = 3/4 for X ~ Beta(3, 1) (Gaussian Thompson sampling
    would pick it with probability 0.88). Over 4000 runs: within 4.5 binomial SE of 3/4."""
    runs = 4000
    world = synthetic_world(list(range(runs)), reward="bernoulli", n_arms=2, horizon=1)
    agent = build_agent(AGENTS["cd_ts"], agent_params("cd_ts"), world, BatchRNG(range(runs)))
    agent.pulls[:] = [2.0, 0.0]
    agent.sums[:] = [2.0, 0.0]
    share = (agent.act(0, None) == 0).mean()
    assert abs(share - 0.75) < 4.5 * np.sqrt(0.75 * 0.25 / runs)


@pytest.mark.parametrize("reward", ["gaussian", "bernoulli"])
@pytest.mark.parametrize(("tau", "gamma", "threshold"), [(10, 0.4, 2.0), (300, 0.0, 3.0)])
@pytest.mark.parametrize("name", ["cd_ucb", "cd_ts"])
def test_the_compiled_rounds_are_the_numpy_statement_bit_for_bit(
    name: str, tau: int, gamma: float, threshold: float, reward: str
) -> None:
    """act and update (compiled) against reference_act and reference_update (numpy): two
    agents of the same seeds in lockstep on one world give the same arms (CD-TS: the same
    draws, forced rounds included) and the very same statistics after every round. The
    thresholds are about 1.3 and 0.35 sd of the statistic (sigma sqrt(tau) <= 1.6 and 8.7):
    every run restarts again and again; tau = 300 sums halves of 150, which numpy splits."""
    seeds, horizon = list(range(6)), 2000
    world = synthetic_world(seeds, reward=reward, horizon=horizon)
    params = agent_params(name, tau=tau, gamma=gamma, threshold=threshold)
    compiled = build_agent(AGENTS[name], params, world, BatchRNG(seeds))
    reference = build_agent(AGENTS[name], params, world, BatchRNG(seeds))
    forced_after_restarts = 0  # gamma = 0.4: arm k forced when (t - r) mod floor(5 / 0.4) = k
    for t in range(horizon):
        phase = (t - compiled.restart) % 12
        forced = (gamma > 0) & (phase < 5) & (compiled.restart > 0)
        actions = compiled.act(t, None)
        np.testing.assert_array_equal(actions[forced], phase[forced])
        forced_after_restarts += forced.sum()
        np.testing.assert_array_equal(actions, reference_act(reference, t))
        rewards = world.reward(t, actions)
        compiled.update(t, None, actions, rewards)
        reference_update(reference, t, actions, rewards)
        for key in ("pulls", "sums", "restart", "detections"):
            np.testing.assert_array_equal(getattr(compiled, key), getattr(reference, key))
        for key in ("counts", "rewards"):
            np.testing.assert_array_equal(
                getattr(compiled.detector, key), getattr(reference.detector, key)
            )
    assert compiled.detections.min() >= 2
    assert forced_after_restarts > 0 or gamma == 0


def test_pairwise_sum_adds_in_numpys_order() -> None:
    """The window halves are summed as np.sum sums them, to the last bit: every length up to
    600 (one accumulator, eight, then splits of the longer ones) and two long ones, on
    numbers of mixed magnitudes, where the order of the additions shows: a left-to-right sum
    differs from np.sum for most lengths."""
    rng = np.random.default_rng(3)
    lengths = [*range(601), 4097, 20_000]
    in_order = 0
    for n in lengths:
        x = rng.normal(0.3, 1.0, n + 5) * 10.0 ** rng.integers(-6, 7, n + 5)
        expected = x[2 : n + 2].sum()
        plan = pairwise_plan(n)
        assert plan_sum(x, 2, plan, np.empty(len(plan))) == expected, n
        in_order += sum(x[2 : n + 2].tolist()) == expected
    assert in_order < len(lengths) / 2


@pytest.mark.parametrize("tau", [2, 4, 14, 16, 100, 258, 300, 1000])
def test_the_window_statistic_is_the_detectors_to_the_last_bit(tau: int) -> None:
    """window_shift on a ring buffer is MeanShiftDetector's statistic: the newest half's sum
    minus the oldest half's, each summed by np.sum over the window read oldest first, for
    every position of the oldest reward in the ring."""
    rng = np.random.default_rng(tau)
    half = tau // 2
    ordered = np.empty(tau)
    for count in range(tau, 3 * tau):
        ring = rng.normal(0.3, 1.0, tau) * 10.0 ** rng.integers(-4, 5, tau)
        window = ring[(count + np.arange(tau)) % tau]
        expected = window[half:].sum() - window[:half].sum()
        plan = pairwise_plan(half)
        assert window_shift(ring, count, ordered, plan, np.empty(len(plan))) == expected
        np.testing.assert_array_equal(ordered, window)


def test_cd_ucb_records_when_it_detects_and_finds_most_changes_within_tau() -> None:
    """20 seeds of the paper's fixed scenario (a change every 200 rounds): one recorded round
    per detection, each true detection's delay its round minus the change's, below tau."""
    env = SyntheticParams(dynamics="fixed")
    trace = run_agent("cd_ucb", np.arange(20), env)
    summary = trace.summary
    counted = [len(rounds) for rounds in summary["detection_rounds"]]
    assert counted == summary["detections"].tolist() and sum(counted) > 20
    true = sum(len(delays) for delays in summary["detection_delays"])
    assert true == sum(counted) - summary["false_alarms"].sum()
    assert true > 0.9 * sum(counted), "most detections find a change"
    delays = np.concatenate([np.array(found, int) for found in summary["detection_delays"]])
    tau, period = agent_params("cd_ucb").tau, env.period
    assert (delays < tau).mean() > 0.6 and delays.min() >= 0 and delays.max() < period
    for run, found in enumerate(summary["detection_delays"]):
        changes = np.flatnonzero(np.diff(trace.state[run])) + 2  # 1-based first rounds
        assert len(found) + summary["missed_changes"][run] == len(changes)
        after = [d - changes[changes <= d].max() for d in summary["detection_rounds"][run]]
        assert found == after  # no false alarm here: every round is its change's plus delay


DETECTING = {"cd_ts": {}, "cusum_ucb": {}, "glr_klucb": {}, "bocd_ts": {}}
DETECTING |= {"cd_linucb": {"threshold": 4.0}, "cd_lints": {"threshold": 4.0}}  # 13: none here


@pytest.mark.parametrize("name", list(DETECTING))
def test_every_detecting_agent_records_one_round_per_detection(name: str) -> None:
    env = SyntheticParams(dynamics="fixed", horizon=1000)
    trace = run_agent(name, [0, 1, 2], env, **DETECTING[name])
    counted = [len(rounds) for rounds in trace.summary["detection_rounds"]]
    assert counted == trace.summary["detections"].tolist() and sum(counted) > 0
