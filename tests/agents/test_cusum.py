"""CUSUM-UCB (nslb_cli.agents.cusum): the CUSUM statistic, its alarms, local restarts, the
UCB index and exploration, the defaults, and play on the fixed scenario."""

from __future__ import annotations

import numpy as np
import pytest

from nslb_cli.agents.cusum import CUSUMUCB, CUSUMUCBParams, cusum_defaults, random_argmax
from nslb_cli.bandit.rewards import Bernoulli, Gaussian, RewardModel
from nslb_cli.bandit.rng import BatchRNG
from nslb_cli.common.errors import ConfigError
from nslb_cli.runner.simulate import build_agent
from tests.helpers.agents import against_random, two_state_agent
from tests.helpers.reference_kernels import cusum_index
from tests.helpers.worlds import synthetic_world


def make_agent(
    runs: int, arms: int = 2, horizon: int = 2000, model: RewardModel | None = None, **params
) -> CUSUMUCB:
    """A CUSUM-UCB for ``runs`` runs, told a two-state chain switching every 200 rounds."""
    return two_state_agent(CUSUMUCB, runs, arms, horizon, model, **params)  # type: ignore[return-value]


def feed(agent: CUSUMUCB, arm: int, rewards: np.ndarray) -> None:
    """Give ``rewards[:, i]`` (one column per round) to ``arm`` in every run."""
    arms = np.full(rewards.shape[0], arm)
    for i in range(rewards.shape[1]):
        agent.update(i, None, arms, rewards[:, i])


def brute_force_cusum(y: np.ndarray, warmup: int, eps: float) -> tuple[np.ndarray, np.ndarray]:
    """``g+_k`` and ``g-_k`` of every prefix ``y_1 .. y_k`` in closed form: the largest sum of
    increments ``s_i = +-(y_i - u_0) - eps`` over the suffixes ``i = j .. k`` with ``j > M``
    (every split point), or 0."""
    u0 = y[:warmup].mean()
    plus, minus = np.zeros(len(y)), np.zeros(len(y))
    for k in range(warmup, len(y)):
        up = [(y[j : k + 1] - u0 - eps).sum() for j in range(warmup, k + 1)]
        down = [(u0 - y[j : k + 1] - eps).sum() for j in range(warmup, k + 1)]
        plus[k], minus[k] = max(0.0, *up), max(0.0, *down)
    return plus, minus


@pytest.mark.parametrize("sigma", [0.5, 2.0])
def test_cusum_statistic_is_the_largest_suffix_sum(sigma: float) -> None:
    # Hand-made rewards: a level, a rise, a fall. eps and h are in units of [0, 1] rewards:
    # the drift applied is 2 sigma eps (0.05 for sigma = 0.5, 0.2 for sigma = 2).
    y = np.array([0.4, 0.6, 0.5, 0.3, 0.7, 0.5, 1.1, 0.9, 1.4, 1.0, 0.2, -0.4, 0.0, -0.3, 0.5])
    y = y * 2 * sigma
    agent = make_agent(1, model=Gaussian(sigma), warmup=5, epsilon=0.05, threshold=1e6)
    plus, minus = brute_force_cusum(y, 5, 2 * sigma * 0.05)
    assert plus.max() > 1.0 and minus.max() > 1.0  # both sides move
    for k in range(len(y)):
        feed(agent, 0, y[None, k : k + 1])
        assert agent.pulls[0, 0] == k + 1
        assert agent.g_plus[0, 0] == pytest.approx(plus[k], abs=1e-12)
        assert agent.g_minus[0, 0] == pytest.approx(minus[k], abs=1e-12)
        if k + 1 < 5:
            assert np.isnan(agent.baseline[0, 0])
        else:
            assert agent.baseline[0, 0] == pytest.approx(y[:5].mean())
    assert agent.detections[0] == 0


def test_a_clear_change_is_detected_within_a_few_rewards() -> None:
    # eps = 0.3, h = 6 (sigma = 1/2: reward units): on a stationary arm each increment has
    # mean about -0.3 and sd 0.5, so crossing h = 12 sd is rare (about e^-14 per excursion);
    # after the mean jumps by +1 the upper walk climbs by 0.7 per reward: h within ~9.
    runs, before, after = 50, 150, 30
    rng = np.random.default_rng(3)
    y = rng.normal(0.0, 0.5, (runs, before + after))
    y[:, before:] += 1.0
    agent = make_agent(runs, warmup=50, epsilon=0.3, threshold=6.0)
    feed(agent, 0, y[:, :before])
    assert agent.detections.sum() == 0
    first = np.full(runs, -1)
    for i in range(after):
        feed(agent, 0, y[:, before + i : before + i + 1])
        first[(first < 0) & (agent.detections > 0)] = i + 1
    assert np.all((first >= 1) & (first <= 20)), first
    assert np.all(agent.detections == 1)
    assert np.all(agent.pulls[:, 0] == after - first)  # restarted empty


def first_alarms(y: np.ndarray, warmup: int, eps: float, h: float) -> np.ndarray:
    """Index of the first alarm of the CUSUM of each row of ``y`` (``-1`` for none),
    computed directly: the recursion run on every sequence."""
    u0 = y[:, :warmup].mean(axis=1)
    plus, minus = np.zeros(len(y)), np.zeros(len(y))
    first = np.full(len(y), -1)
    for k in range(warmup, y.shape[1]):
        step = y[:, k] - u0
        plus = np.maximum(0.0, plus + step - eps)
        minus = np.maximum(0.0, minus - step - eps)
        first[(first < 0) & ((plus >= h) | (minus >= h))] = k
    return first


@pytest.mark.parametrize("model", [Gaussian(0.5), Bernoulli()], ids=["gaussian", "bernoulli"])
def test_false_alarms_on_a_stationary_arm_are_at_the_tests_rate(model: RewardModel) -> None:
    # M = 20, eps = 0.05, h = 9.97 on 200 rewards of a stationary arm (mean 0.4): the false-alarm
    # probability is that of the CUSUM recursion itself, estimated on 20,000 other sequences;
    # the agent's rate over 400 runs (fixed seeds) must agree within 3 binomial standard
    # errors. On the agent's own sequences its first alarms are exactly the recursion's.
    runs, n, warmup, eps, h = 400, 200, 20, 0.05, 9.97

    def draw(rng: np.random.Generator, count: int) -> np.ndarray:
        noise = model.noise(rng, count * n).reshape(count, n)
        return model.realise(np.full((count, n), 0.4), noise)

    reference = first_alarms(draw(np.random.default_rng(1), 20_000), warmup, eps, h)
    p = float(np.mean(reference >= 0))
    assert 0.05 < p < 0.95  # a rate worth comparing
    y = draw(np.random.default_rng(2), runs)
    agent = make_agent(runs, model=model, warmup=warmup, epsilon=eps, threshold=h)
    first = np.full(runs, -1)
    for k in range(n):
        feed(agent, 0, y[:, k : k + 1])
        first[(first < 0) & (agent.detections > 0)] = k
    np.testing.assert_array_equal(first, first_alarms(y, warmup, eps, h))
    se = np.sqrt(p * (1 - p) / runs + p * (1 - p) / 20_000)
    assert abs(np.mean(first >= 0) - p) <= 3 * se


def test_an_alarm_restarts_only_the_arm_that_raised_it() -> None:
    agent = make_agent(1, arms=3, warmup=10, epsilon=0.05, threshold=2.0)
    feed(agent, 1, np.full((1, 30), 0.9))
    feed(agent, 2, np.full((1, 12), 0.2))
    kept = [(agent.pulls[0, a], agent.sums[0, a], agent.baseline[0, a]) for a in (1, 2)]
    feed(agent, 0, np.concatenate([np.zeros((1, 10)), np.ones((1, 5))], axis=1))
    assert agent.detections[0] == 1  # on the 3rd shifted reward: 3 * (1 - 0.05) >= 2
    assert agent.pulls[0, 0] == 2 and agent.sums[0, 0] == 2.0  # the 2 rewards since
    assert [(agent.pulls[0, a], agent.sums[0, a], agent.baseline[0, a]) for a in (1, 2)] == kept
    assert agent.g_plus[0, 1] == agent.g_plus[0, 2] == 0.0  # nothing shifted there


def test_ucb_index_counts_pulls_since_each_arms_restart() -> None:
    # index = Y_a / N_a + 2 sigma sqrt(2 log(n_t) / N_a), n_t = sum of the N_a; +inf if unpulled.
    agent = make_agent(1, arms=3, model=Gaussian(2.0))
    agent.pulls[0] = [4.0, 9.0, 0.0]
    agent.sums[0] = [2.0, 1.0, 0.0]
    n_t = 13.0
    expected = [0.5 + 4 * np.sqrt(2 * np.log(n_t) / 4), 1 / 9 + 4 * np.sqrt(2 * np.log(n_t) / 9)]
    np.testing.assert_allclose(cusum_index(agent)[0, :2], expected, rtol=1e-12)
    assert cusum_index(agent)[0, 2] == np.inf


def test_the_compiled_choice_is_the_index_argmax_with_random_ties() -> None:
    """act (compiled) = the uniform arm where u_0 < alpha, else random_argmax of index():
    on states with several unpulled arms (tied at +inf), equal finite indices and none."""
    runs, arms = 400, 4
    agent = make_agent(runs, arms=arms, alpha=0.2)
    rng = np.random.default_rng(7)
    agent.pulls[:] = rng.integers(0, 4, (runs, arms))
    agent.pulls[:100] = 2.0  # equal pulls and sums: four-way finite ties
    agent.sums[:] = np.where(agent.pulls > 0, rng.normal(0.5, 0.5, (runs, arms)), 0.0)
    agent.sums[:100] = 1.0
    u = BatchRNG(range(runs)).random((1, 2))[:, 0]  # the numbers act draws first
    arms_played = agent.act(0, None)
    uniform = np.minimum(np.floor(u[:, 1] * arms), arms - 1)
    expected = np.where(u[:, 0] < 0.2, uniform, random_argmax(cusum_index(agent), u[:, 1]))
    np.testing.assert_array_equal(arms_played, expected)
    ties = (cusum_index(agent) == cusum_index(agent).max(axis=1, keepdims=True)).sum(axis=1) > 1
    assert ties.sum() > 150 and len(set(arms_played[:100])) == arms  # the ties were exercised


def test_exploration_pulls_a_uniform_arm_with_probability_alpha() -> None:
    # With alpha = 0.3 and K = 4, once every arm has its pulls the UCB arm is arm 3 (means
    # 0, 0, 0, 10, sums set by hand); the other arms are pulled only when exploring,
    # with probability alpha (K - 1) / K = 0.225 per round: the fraction over 100 runs x 200
    # rounds is within 3 binomial standard errors of it, and each arm gets a third of it.
    runs, rounds = 100, 200
    agent = make_agent(runs, arms=4, alpha=0.3, threshold=1e6)
    agent.pulls[:] = 1e6
    agent.sums[:] = np.array([0.0, 0.0, 0.0, 1e7])
    actions = np.stack([agent.act(t, None) for t in range(rounds)], axis=1)
    share = np.mean(actions != 3)
    assert abs(share - 0.225) <= 3 * np.sqrt(0.225 * 0.775 / (runs * rounds))
    counts = np.bincount(actions.ravel(), minlength=4)[:3] / actions.size
    np.testing.assert_allclose(counts, 0.075, atol=3 * np.sqrt(0.075 * 0.925 / actions.size))


def test_defaults_come_from_the_horizon_and_the_number_of_changes() -> None:
    # Synthetic default: n = 2000, switch probability 0.005, so Upsilon = 10.
    world = synthetic_world([0, 1])
    h, alpha = cusum_defaults(world.problem, world.offline_model)
    np.testing.assert_allclose(h, np.log(200.0))
    np.testing.assert_allclose(alpha, np.sqrt(10 / 2000 * np.log(200.0)))
    agent = build_agent(CUSUMUCB, CUSUMUCBParams(), world, BatchRNG([0, 1]))
    np.testing.assert_allclose(agent.summary()["threshold"], np.log(200.0))
    assert (agent.params.epsilon, agent.params.warmup) == (0.05, 100)
    fixed = build_agent(CUSUMUCB, CUSUMUCBParams(alpha=0.2, threshold=7.0), world, BatchRNG([0, 1]))
    assert fixed.alpha.tolist() == [0.2, 0.2] and fixed.threshold.tolist() == [7.0, 7.0]


@pytest.mark.parametrize(
    ("values", "key"),
    [
        ({"alpha": 1.5}, "alpha"),
        ({"threshold": 0.0}, "threshold"),
        ({"epsilon": -0.1}, "epsilon"),
        ({"warmup": 0}, "warmup"),
    ],
)
def test_bad_values_are_refused_naming_the_key(values: dict, key: str) -> None:
    with pytest.raises(ConfigError) as err:
        CUSUMUCBParams(**values)
    assert err.value.key == key
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("reward", ["gaussian", "bernoulli"])
def test_beats_random_on_the_fixed_scenario(reward: str) -> None:
    regret, random, summary = against_random(CUSUMUCB, CUSUMUCBParams(), reward)
    assert summary and all(v.shape == (len(regret),) for v in summary.values())
    assert regret.mean() < 0.6 * random.mean()
