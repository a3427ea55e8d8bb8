"""env=movielens (docs/design.md §3.2): the world a seed gets, its randomness, agents on it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from nslb_cli.bandit.rng import Stream, categorical, generator
from nslb_cli.common.errors import ConfigError
from nslb_cli.envs.movielens import (
    Catalogue,
    MovieLens,
    MovieLensParams,
    latent_path,
    load,
    smallest_transition,
    superusers,
    transition_matrix,
)
from nslb_cli.runner.config import RunConfig, RunSettings
from nslb_cli.runner.job import simulate_seeds
from tests.helpers.agents import agent_params
from tests.helpers.movielens import needs_ml_100k, tiny_env_params
from tests.helpers.paths import ML_100K
from tests.helpers.results_tree import seed_frame


@pytest.fixture(scope="module")
def params(tmp_path_factory: pytest.TempPathFactory) -> MovieLensParams:
    return tiny_env_params(tmp_path_factory.mktemp("movielens"), horizon=300)


SEEDS = np.array([3, 7, 11])


def test_shapes_and_contexts(params: MovieLensParams) -> None:
    world = MovieLens.build(params, SEEDS)
    data = load(params).data
    R, n, K, S, d = len(SEEDS), params.horizon, params.n_arms, params.n_states, params.rank
    assert world.states.shape == world.noise.shape == (R, n)
    assert world.items.shape == world.mean_rewards.shape == (R, n, K)
    assert world.features is data.train_items and world.features.shape == (len(data.movie_ids), d)
    for t in (0, 17, n - 1):
        np.testing.assert_array_equal(world.context(t), data.train_items[world.items[:, t]])
    assert world.states.min() >= 0 and world.states.max() < S
    model = world.offline_model
    assert model.linear and model.means.shape == (R, S, d)
    assert model.covariance.shape == (R, S, d, d) and model.mean_sd.shape == (R, S, 0)
    assert model.transitions.shape == model.concentration.shape == (R, S, S)
    np.testing.assert_array_equal(model.initial, np.full((R, S), 1 / S))


def test_slates_are_genres_with_replacement_then_a_movie_of_each(params: MovieLensParams) -> None:
    world = MovieLens.build(params, SEEDS)
    data = load(params).data
    catalogue = Catalogue.of(data)
    for r, seed in enumerate(SEEDS):
        genres, movies = catalogue.sample(generator(seed, Stream.CONTEXTS), params.horizon, 6)
        np.testing.assert_array_equal(world.items[r], movies)
        present = np.flatnonzero(data.genres.any(axis=0))
        assert np.all(data.genres[movies, present[genres]]), "each movie has its slot's genre"


def test_genre_and_movie_draws_are_uniform() -> None:
    """Genres uniform with replacement (repeats within a round at the exact rate); movies
    uniform within a genre. Frequencies within 4.5 binomial SE."""
    # genre a: movies 0 1 2; b: 3 4; c: 5 6 0
    movies, start, count = (
        np.array([0, 1, 2, 3, 4, 5, 6, 0]),
        np.array([0, 3, 5]),
        np.array([3, 2, 3]),
    )
    catalogue = Catalogue(movies, start, count, ("a", "b", "c"))
    rounds, k = 20_000, 3
    drawn, movies = catalogue.sample(np.random.default_rng(0), rounds, k)
    repeat = np.mean([len(set(row)) < k for row in drawn])
    p_repeat = 1 - (3 * 2 * 1) / 3**3
    assert abs(repeat - p_repeat) < 4.5 * np.sqrt(p_repeat * (1 - p_repeat) / rounds)
    share = np.bincount(drawn.ravel(), minlength=3) / drawn.size
    assert np.all(np.abs(share - 1 / 3) < 4.5 * np.sqrt(2 / 9 / drawn.size))
    in_c = movies[drawn == 2]
    freq = np.array([np.mean(in_c == m) for m in (5, 6, 0)])
    assert np.all(np.abs(freq - 1 / 3) < 4.5 * np.sqrt(2 / 9 / len(in_c)))


def test_mean_rewards_are_test_user_times_test_movie(params: MovieLensParams) -> None:
    """Recomputed one by one with np.dot from the sampled users, states and movies."""
    world = MovieLens.build(params, SEEDS)
    data = load(params).data
    for r, seed in enumerate(SEEDS):
        users = superusers(data, seed)
        for t in range(0, params.horizon, 37):
            for a in range(params.n_arms):
                user = data.test_users[users[world.states[r, t]]]
                expected = np.dot(user, data.test_items[world.items[r, t, a]])
                assert world.mean_rewards[r, t, a] == pytest.approx(expected, rel=1e-12, abs=1e-12)


def test_one_user_per_test_cluster(params: MovieLensParams) -> None:
    data = load(params).data
    draws = np.stack([superusers(data, s) for s in range(40)])
    for s in range(params.n_states):
        assert np.all(data.test_labels[draws[:, s]] == s)
    assert len({tuple(d) for d in draws}) > 30, "superusers differ between seeds"


def test_noise_is_gaussian_with_sigma(params: MovieLensParams) -> None:
    noise = MovieLens.build(replace(params, horizon=4000, sigma=0.5), np.arange(5)).noise
    assert abs(noise.mean()) < 4 * 0.5 / np.sqrt(noise.size)
    assert abs(noise.std() - 0.5) < 4 * 0.5 / np.sqrt(2 * noise.size)


@pytest.mark.parametrize("form", ["structured", "literal"])
@pytest.mark.parametrize("stay", [0.0, 0.3, 0.9975, 1.0])
def test_smallest_transition_is_a_lower_bound(form: str, stay: float) -> None:
    rng = np.random.default_rng(0)
    for scale in (0.1, 1.0, 5.0):
        phi = transition_matrix(rng.normal(0, scale, (5, 4)), stay, form)
        assert phi.min() >= smallest_transition(5, stay, form) - 1e-15


def test_transition_formulas_by_hand() -> None:
    points = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 2.0]])
    distance = np.array([[0, 1, 4], [1, 0, 5], [4, 5, 0]], dtype=float)
    stay = 0.9
    structured = transition_matrix(points, stay, "structured")
    for s in range(3):
        others = [o for o in range(3) if o != s]
        k = np.exp(-distance[s, others]) / np.exp(-distance[s, others]).sum()
        np.testing.assert_allclose(structured[s, others], 0.1 * (0.9 / 2 + 0.1 * k))
        assert structured[s, s] == pytest.approx(stay)
    literal = transition_matrix(points, stay, "literal")
    k = np.exp(distance) / np.exp(distance).sum(axis=1, keepdims=True)
    jump = np.where(np.eye(3, dtype=bool), 1 - stay, stay / 2)
    np.testing.assert_allclose(literal, 0.9 * jump + 0.1 * k)
    for phi in (structured, literal):
        np.testing.assert_allclose(phi.sum(axis=1), 1.0)
    far = transition_matrix(points * 100, 0.99, "literal")  # exp(+D) must not overflow
    assert np.all(np.isfinite(far)) and np.allclose(far.sum(axis=1), 1.0)


@pytest.mark.parametrize("form", ["structured", "literal"])
def test_latent_path_is_the_round_by_round_categorical_chain(
    params: MovieLensParams, form: str
) -> None:
    """The table of successors gives exactly the chain drawn one round at a time."""
    data = load(params).data
    seeds = np.array([4, 9, 13])
    phi = np.stack(
        [transition_matrix(data.test_users[superusers(data, s)], 0.9, form) for s in seeds]
    )
    states = latent_path(seeds, phi, 400)
    for r, seed in enumerate(seeds):
        rng = generator(int(seed), Stream.PATH)
        expected = [rng.integers(params.n_states)]
        uniforms = rng.random(400)
        for t in range(1, 400):
            expected.append(categorical(phi[r, expected[-1]], uniforms[t]))
        np.testing.assert_array_equal(states[r], expected)


def test_structured_chain_changes_at_rate_one_minus_stay(params: MovieLensParams) -> None:
    """Change frequency over 40 × 2999 steps within 4 binomial SE of 1 - stay."""
    p = replace(params, stay=0.99, horizon=3000)
    states = MovieLens.build(p, np.arange(40)).states
    changes = (states[:, 1:] != states[:, :-1]).mean()
    se = np.sqrt(0.01 * 0.99 / states[:, 1:].size)
    assert abs(changes - 0.01) < 4 * se


def test_true_transitions_rows_and_first_state(params: MovieLensParams) -> None:
    data = load(params).data
    for form in ("structured", "literal"):
        for seed in range(5):
            phi = transition_matrix(data.test_users[superusers(data, seed)], 0.9975, form)
            np.testing.assert_allclose(phi.sum(axis=1), 1.0, rtol=0, atol=1e-12)
            assert np.all(phi >= 0)
    first = MovieLens.build(replace(params, horizon=1), np.arange(600)).states[:, 0]
    share = np.bincount(first, minlength=3) / len(first)
    assert np.all(np.abs(share - 1 / 3) < 4.5 * np.sqrt(2 / 9 / len(first)))


def test_offline_model_is_the_train_clusters(params: MovieLensParams) -> None:
    data = load(params).data
    model = MovieLens.build(replace(params, prior_ridge=0.01), SEEDS).offline_model
    for s in range(params.n_states):
        members = data.train_users[data.train_labels == data.train_of[s]]
        np.testing.assert_allclose(model.means[1, s], members.mean(axis=0))
        expected = np.cov(members.T) + 0.01 * np.eye(params.rank)
        np.testing.assert_allclose(model.covariance[2, s], expected)
    phi_hat = transition_matrix(model.means[0], params.stay, "structured")
    np.testing.assert_allclose(model.transitions[0], phi_hat)
    np.testing.assert_allclose(model.concentration[0], 800 * phi_hat)
    assert np.all(model.means == model.means[:1]), "the same offline model for every seed"


def test_batch_invariance(params: MovieLensParams) -> None:
    """Seed 7's world is identical alone and inside a batch (docs/design.md §2)."""
    alone = MovieLens.build(params, np.array([7]))
    batch = MovieLens.build(params, np.array([2, 7, 11, 30]))
    for name in ("states", "items", "mean_rewards", "noise"):
        np.testing.assert_array_equal(getattr(alone, name)[0], getattr(batch, name)[1], name)
    for name in ("means", "covariance", "transitions", "concentration", "initial"):
        a, b = getattr(alone.offline_model, name), getattr(batch.offline_model, name)
        np.testing.assert_array_equal(a[0], b[1], name)


def test_literal_chain_changes_almost_every_round(params: MovieLensParams) -> None:
    states = MovieLens.build(replace(params, transitions="literal"), SEEDS).states
    assert (states[:, 1:] != states[:, :-1]).mean() > 0.8


AGENTS = ("mts", "umts", "random", "oracle")


def run(params: MovieLensParams, agent: str, seeds: list[int], **overrides: object):
    config = RunConfig(
        name="test",
        env=params,
        agent=agent_params(agent, **overrides),
        run=RunSettings(progress=False),
    )
    return simulate_seeds(config, np.asarray(seeds))


@pytest.mark.parametrize("agent", AGENTS)
def test_agents_run_on_movielens(params: MovieLensParams, agent: str) -> None:
    extra = {"num_particles": 20} if agent == "umts" else {}
    trace = run(params, agent, [1, 2], **extra)
    assert trace.action.shape == (2, params.horizon)
    assert trace.action.min() >= 0 and trace.action.max() < params.n_arms
    assert np.all(trace.regret >= -1e-12)
    if agent == "oracle":
        assert np.all(trace.regret == 0)
    alone = run(params, agent, [2], **extra)
    csv_alone = seed_frame(alone, 0).to_csv(index=False)
    assert csv_alone == seed_frame(trace, 1).to_csv(index=False), "batch invariance"


def test_mts_beats_random(params: MovieLensParams) -> None:
    p = replace(params, horizon=500)
    seeds = list(range(8))
    assert run(p, "mts", seeds).regret.sum() < 0.7 * run(p, "random", seeds).regret.sum()


INVALID = [
    ({"transitions": "paper"}, "transitions: must be one of structured, literal"),
    ({"stay": 1.5}, "stay: must be in [0, 1]"),
    ({"n_states": 1}, "n_states: must be >= 2"),
    ({"n_arms": 1}, "n_arms: must be >= 2"),
    ({"rank": 0}, "rank: must be > 0"),
    ({"als_reg": 0.0}, "als_reg: must be > 0"),
    ({"als_reg": "ten"}, "als_reg: must be 'auto' or a number, got 'ten'"),
    ({"prior_ridge": -1.0}, "prior_ridge: must be >= 0"),
    ({"prior_concentration": 0.0}, "prior_concentration: must be > 0"),
    ({"prior_concentration": 10.0}, "n_states: 5 states with stay=0.9975 make phi_hat"),
    ({"sigma": 0.0}, "sigma: must be >= 1e-06"),
    ({"min_user_ratings": 0}, "min_user_ratings: must be > 0"),
    ({"release": "ml-20m"}, "release: no pinned checksum for release 'ml-20m'"),
    ({"data_dir": "/nonexistent/ml"}, "data_dir: not a folder: /nonexistent/ml"),
]


@pytest.mark.parametrize(("change", "message"), INVALID)
def test_invalid_parameters(change: dict, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        MovieLensParams(**change)
    assert str(caught.value).startswith(message)


def test_als_reg_is_auto_by_default_and_a_number_fixes_it() -> None:
    assert MovieLensParams().settings().als_reg == "auto"
    assert MovieLensParams(als_reg=5).settings().als_reg == 5.0


def test_unpinned_release_is_fine_from_a_local_folder(tmp_path: Path) -> None:
    assert MovieLensParams(release="ml-20m", data_dir=str(tmp_path)).release == "ml-20m"


@needs_ml_100k
def test_ml100k_at_100_100(tmp_path: Path) -> None:
    """The real data: sizes after filtering, weak latent structure (docs/design.md §3.2)."""
    folders = {"data_dir": str(ML_100K), "cache_dir": str(tmp_path)}
    p = MovieLensParams(**folders, min_user_ratings=100, min_item_ratings=100, horizon=50)
    loaded = load(p)
    d = loaded.data.diagnostics
    assert (d["filtered"]["users"], d["filtered"]["movies"]) == (364, 338)
    assert sum(d["clusters"]["test_sizes"]) == 364
    assert d["rmse"]["train_factors_on_test"] < d["rmse"]["mean_rating_baseline_on_test"]
    assert 0.2 < d["clusters"]["agreement"] < 0.9
    assert d["penalty"]["chosen"] == 10.0 and [r for r, _ in d["penalty"]["searched"]] == [
        5,
        10,
        20,
    ]
    assert d["scale"] == {"min": 1.0, "max": 5.0, "step": 1.0}
    assert 1.0 < d["squared_distance"]["test_users"]["between_users"] < 3.0
    world = MovieLens.build(p, np.arange(2))
    assert world.features.shape == (338, 20) and world.items.max() < 338
