"""GLR-klUCB (nslb_cli.agents.glr): the GLR statistic, its detections and false alarms, the
kl-UCB index, local and global restarts, forced exploration, the defaults, and play on the
fixed scenario."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import bernoulli, norm

from nslb_cli.agents.glr import GLRklUCB, GLRklUCBParams, glr_defaults
from nslb_cli.bandit.rewards import Bernoulli, Gaussian, RewardModel
from nslb_cli.bandit.rng import BatchRNG
from nslb_cli.common.errors import ConfigError
from nslb_cli.runner.simulate import build_agent, simulate
from tests.helpers.agents import against_random, two_state_agent
from tests.helpers.reference_kernels import glr_statistic, glr_threshold
from tests.helpers.worlds import synthetic_world

MODELS = [Gaussian(0.5), Bernoulli()]
IDS = ["gaussian", "bernoulli"]


def make_agent(
    runs: int, arms: int = 2, horizon: int = 2000, model: RewardModel | None = None, **params
) -> GLRklUCB:
    """A GLR-klUCB for ``runs`` runs, told a two-state chain switching every 200 rounds."""
    return two_state_agent(GLRklUCB, runs, arms, horizon, model, **params)  # type: ignore[return-value]


def feed(agent: GLRklUCB, arm: int, rewards: np.ndarray, start: int = 0) -> np.ndarray:
    """Give ``rewards[:, i]`` to ``arm`` in every run in rounds ``start + i``; return the
    detections after each round, ``(R, rounds)``."""
    arms = np.full(rewards.shape[0], arm)
    seen = []
    for i in range(rewards.shape[1]):
        agent.update(start + i, None, arms, rewards[:, i])
        seen.append(agent.detections.copy())
    return np.stack(seen, axis=1)


def log_likelihood(model: RewardModel, z: np.ndarray, mean: float) -> float:
    """``sum log p(z_i | mean)`` from scipy, not from the reward model."""
    if isinstance(model, Gaussian):
        return float(norm(mean, model.sigma).logpdf(z).sum())
    return float(bernoulli(mean).logpmf(z).sum())


def brute_force_glr(model: RewardModel, z: np.ndarray, splits: range) -> float:
    """``max_s`` of the generalized log-likelihood ratio of "a change after ``s`` rewards"
    against "no change", each mean at its maximum-likelihood value, over ``splits``."""
    one = log_likelihood(model, z, z.mean())
    return max(
        log_likelihood(model, z[:s], z[:s].mean())
        + log_likelihood(model, z[s:], z[s:].mean())
        - one
        for s in splits
    )


SEQUENCES = {
    "gaussian": np.array([0.3, 0.5, 0.1, 0.4, 0.2, 0.9, 1.2, 0.8, 1.1, 1.0, 0.7, 1.3, 0.9]),
    "bernoulli": np.array([0, 0, 1, 0, 0, 0, 1, 1, 1, 0, 1, 1, 1], dtype=float),
}


@pytest.mark.parametrize("model", MODELS, ids=IDS)
@pytest.mark.parametrize("step", [1, 3])
def test_glr_statistic_is_the_log_likelihood_ratio_of_the_best_split(
    model: RewardModel, step: int
) -> None:
    # For every prefix Z_1..Z_k (k >= 2) the statistic is the largest log-likelihood ratio
    # over the split points s = 1, 1 + step, .. <= k - 1: the brute-force likelihoods of
    # every split, computed with scipy. (delta = 1e-300: no detection can interrupt.)
    z = SEQUENCES["gaussian" if isinstance(model, Gaussian) else "bernoulli"]
    agent = make_agent(1, model=model, delta=1e-300, test_every=1, split_every=step)
    for k in range(1, len(z) + 1):
        feed(agent, 0, z[None, k - 1 : k], start=k - 1)
        if k >= 2:
            got = glr_statistic(agent, np.array([0]), np.array([0]), np.array([k]))[0]
            expected = brute_force_glr(model, z[:k], range(1, k, step))
            assert got == pytest.approx(expected, rel=1e-9, abs=1e-12), k
    assert agent.detections[0] == 0


@pytest.mark.parametrize("model", MODELS, ids=IDS)
@pytest.mark.parametrize("step", [1, 4])
def test_compiled_detections_are_where_the_numpy_statistic_crosses_the_threshold(
    model: RewardModel, step: int
) -> None:
    # The compiled update detects after reward k exactly when statistic() (numpy) of the
    # arm's first k rewards reaches log(3 k^1.5 / delta): a shadow agent that never detects
    # (delta = 1e-300) gives the statistic; 60 runs, a change of mean after 60 rewards.
    runs, n, delta = 60, 120, 0.05
    rng = np.random.default_rng(6)
    means = np.where(np.arange(n) < 60, 0.2, 0.8)
    noise = model.noise(rng, runs * n).reshape(runs, n)
    y = model.realise(np.broadcast_to(means, noise.shape), noise)
    agent = make_agent(runs, model=model, delta=delta, test_every=1, split_every=step)
    shadow = make_agent(runs, model=model, delta=1e-300, test_every=1, split_every=step)
    first = np.zeros(runs, dtype=np.int64)  # rewards seen at each run's first detection
    for k in range(1, n + 1):
        agent.update(k - 1, None, np.zeros(runs, dtype=np.int64), y[:, k - 1])
        shadow.update(k - 1, None, np.zeros(runs, dtype=np.int64), y[:, k - 1])
        if k < 2:
            continue
        undetected = first == 0
        ks = np.full(runs, k)
        statistic = glr_statistic(shadow, np.arange(runs), np.zeros(runs, dtype=np.int64), ks)
        crossed = statistic >= glr_threshold(ks, delta)
        np.testing.assert_array_equal(agent.detections[undetected], crossed[undetected])
        first[undetected & crossed] = k
    assert np.count_nonzero(first) > runs // 2  # detections were exercised


def test_gaussian_statistic_is_the_scaled_difference_of_means() -> None:
    # G(s) = s (k - s) / k (mean_1 - mean_2)^2 / (2 sigma^2), the textbook form, sigma = 2.
    z = 4 * SEQUENCES["gaussian"]
    agent = make_agent(1, model=Gaussian(2.0), delta=1e-300, test_every=1, split_every=1)
    feed(agent, 0, z[None])
    k = len(z)
    closed = [s * (k - s) / k * (z[:s].mean() - z[s:].mean()) ** 2 / 8 for s in range(1, k)]
    got = glr_statistic(agent, np.array([0]), np.array([0]), np.array([k]))[0]
    assert got == pytest.approx(max(closed), rel=1e-12)


@pytest.mark.parametrize("model", MODELS, ids=IDS)
def test_a_clear_change_is_detected_soon_after_it(model: RewardModel) -> None:
    # 150 rewards of mean 0.1, then mean 0.9 (Gaussian noise sd 1/2, or clicks), delta = 1e-3,
    # tests every 10 rewards: no run detects before the change, every run within 80 rewards
    # after it (about 20 are needed on average), at a multiple of 10 rewards.
    runs, before, after = 40, 150, 80
    rng = np.random.default_rng(4)
    means = np.where(np.arange(before + after) < before, 0.1, 0.9)
    noise = model.noise(rng, runs * (before + after)).reshape(runs, -1)
    y = model.realise(np.broadcast_to(means, noise.shape), noise)
    agent = make_agent(runs, model=model, delta=1e-3)
    seen = feed(agent, 0, y)
    assert seen[:, before - 1].sum() == 0
    assert np.all(seen[:, -1] >= 1)
    first = (seen > 0).argmax(axis=1) + 1  # rewards seen at the first detection
    assert np.all((first > before) & (first % 10 == 0))


@pytest.mark.parametrize("model", MODELS, ids=IDS)
def test_false_alarms_on_a_stationary_arm_stay_below_delta(model: RewardModel) -> None:
    # The threshold log(3 k^1.5 / delta) keeps the probability of any false alarm below
    # delta (the paper's Lemma 1 with its practical threshold): 200 stationary rewards,
    # tested after every one at every split point, delta = 0.1, 300 runs (fixed seeds): the
    # fraction of runs with an alarm is below delta + 3 binomial standard errors.
    runs, n, delta = 300, 200, 0.1
    noise = model.noise(np.random.default_rng(5), runs * n).reshape(runs, n)
    y = model.realise(np.full((runs, n), 0.4), noise)
    agent = make_agent(runs, model=model, delta=delta, test_every=1, split_every=1)
    seen = feed(agent, 0, y)
    rate = np.mean(seen[:, -1] > 0)
    assert rate <= delta + 3 * np.sqrt(delta * (1 - delta) / runs)


@pytest.mark.parametrize("restarts", ["local", "global"])
def test_a_detection_restarts_the_arm_or_every_arm(restarts: str) -> None:
    agent = make_agent(1, arms=3, restarts=restarts, delta=1e-3)
    feed(agent, 1, np.full((1, 25), 0.9))
    feed(agent, 2, np.full((1, 12), 0.2), start=25)
    kept = agent.pulls[0].copy(), agent.sums[0].copy(), agent.restart[0].copy()
    y = np.concatenate([np.zeros((1, 40)), np.full((1, 20), 3.0)], axis=1)
    seen = feed(agent, 0, y, start=37)
    assert agent.detections[0] == 1
    detected = int((seen[0] > 0).argmax())  # index of the round of the detection
    assert agent.restart[0, 0] == 37 + detected + 1  # tau: the 1-based round of detection
    assert agent.pulls[0, 0] == len(y[0]) - detected - 1
    if restarts == "local":
        np.testing.assert_array_equal(agent.pulls[0, 1:], kept[0][1:])
        np.testing.assert_array_equal(agent.sums[0, 1:], kept[1][1:])
        np.testing.assert_array_equal(agent.restart[0, 1:], kept[2][1:])
    else:
        assert agent.pulls[0, 1:].tolist() == [0, 0]
        assert agent.restart[0].tolist() == [37 + detected + 1] * 3


def exploration_function(s: float) -> float:
    """The paper's f(s) = log(s) + 3 log(log(s)), log log clipped at 0 below e."""
    return 0.0 if s <= 1 else np.log(s) + 3 * np.log(max(1.0, np.log(s)))


@pytest.mark.parametrize("model", MODELS, ids=IDS)
def test_kl_ucb_index_is_the_top_of_the_kl_ball(model: RewardModel) -> None:
    # index = max {q : N d(mean, q) <= f(t - tau)}, against a search over a grid of q.
    agent = make_agent(1, arms=4, model=model)
    agent.pulls[0] = [3, 40, 700, 0]
    agent.sums[0] = [2.0, 10.0, 350.0, 0.0]
    agent.restart[0] = [0, 120, 900, 0]
    t = 1500
    index = agent.index(t)[0]
    assert index[3] == np.inf
    for a in range(3):
        mean = agent.sums[0, a] / agent.pulls[0, a]
        level = exploration_function(t - agent.restart[0, a]) / agent.pulls[0, a]
        top = 1.0 if isinstance(model, Bernoulli) else mean + 3.0
        grid = np.linspace(mean, top, 1_000_001)
        expected = grid[model.divergence(mean, grid) <= level].max()
        assert expected <= index[a] <= expected + (top - mean) * 1.01e-6


def test_forced_exploration_pulls_the_arms_in_turn() -> None:
    # alpha = 0.5, K = 5: period floor(5 / 0.5) = 10; in 1-based round t with t mod 10 in 1..5
    # arm (t mod 10) - 1 is pulled, whatever the indices.
    world = synthetic_world([0, 1], horizon=300)
    agent = build_agent(GLRklUCB, GLRklUCBParams(alpha=0.5), world, BatchRNG([0, 1]))
    actions = simulate(world, agent, progress=False).action
    t = np.arange(1, 301)
    forced = (t % 10 >= 1) & (t % 10 <= 5)
    np.testing.assert_array_equal(actions[:, forced], np.broadcast_to(t[forced] % 10 - 1, (2, 150)))


def test_defaults_come_from_the_horizon_the_arms_and_the_number_of_changes() -> None:
    # Synthetic default: K = 5, n = 2000, switch probability 0.005, so Upsilon = 10.
    world = synthetic_world([0, 1])
    problem, model = world.problem, world.offline_model
    delta, alpha = glr_defaults(problem, model, "local", 0.05)
    np.testing.assert_allclose(delta, 1 / np.sqrt(5 * 10 * 2000))
    np.testing.assert_allclose(alpha, 0.05 * np.sqrt(5 * 10 * np.log(2000) / 2000))
    delta, alpha = glr_defaults(problem, model, "global", 0.05)
    np.testing.assert_allclose(delta, 1 / np.sqrt(10 * 2000))
    np.testing.assert_allclose(alpha, 0.05 * np.sqrt(10 * np.log(2000) / 2000))
    agent = build_agent(GLRklUCB, GLRklUCBParams(), world, BatchRNG([0, 1]))
    assert agent.period.tolist() == [229, 229]  # floor(5 / 0.0218)
    assert (agent.params.test_every, agent.params.split_every) == (10, 10)
    assert set(agent.summary()) == {"detections", "alpha", "delta"}


@pytest.mark.parametrize(
    ("values", "key"),
    [
        ({"restarts": "some"}, "restarts"),
        ({"delta": 0.0}, "delta"),
        ({"delta": 1.5}, "delta"),
        ({"alpha": 1e-300}, "alpha"),
        ({"alpha": -0.1}, "alpha"),
        ({"alpha_scale": 2.0}, "alpha_scale"),
        ({"test_every": 0}, "test_every"),
        ({"split_every": 2**31 + 1}, "split_every"),
    ],
)
def test_bad_values_are_refused_naming_the_key(values: dict, key: str) -> None:
    with pytest.raises(ConfigError) as err:
        GLRklUCBParams(**values)
    assert err.value.key == key
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("reward", ["gaussian", "bernoulli"])
def test_beats_random_on_the_fixed_scenario(reward: str) -> None:
    regret, random, summary = against_random(GLRklUCB, GLRklUCBParams(), reward)
    assert regret.mean() < 0.4 * random.mean()
