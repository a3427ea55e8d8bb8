"""``env=movielens_genres``: user clusters, genres and ratings as a switching latent bandit."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from nslb_cli.common.errors import ConfigError
from nslb_cli.data import DataError
from nslb_cli.envs.movielens_genres import MovieLensGenres, MovieLensGenresParams, load, model
from tests.helpers.cli import QUICK, nslb, said
from tests.helpers.movielens import needs_ml_100k
from tests.helpers.paths import ML_100K

GENRES = ("A", "B", "C")
MOVIES = {1: "A", 2: "A", 3: "B", 4: "AB", 5: "", 6: "C"}  # movie 5 has no genre
TASTES = {  # users 1, 2 like A; users 3, 4 like B; only they rated movie 6 (genre C)
    1: {1: 5, 2: 4, 3: 1, 4: 3, 5: 2},
    2: {1: 5, 2: 4, 3: 1, 4: 3, 5: 2},
    3: {1: 1, 2: 2, 3: 5, 4: 4, 5: 3, 6: 4},
    4: {1: 1, 2: 2, 3: 5, 4: 4, 5: 3, 6: 5},
}
# Ratings 1..5 that each taste group gave to each genre, counted by hand (movie 4 counts for
# A and B, movie 5 for none).
COUNTS = {
    "likes A": {"A": [0, 0, 2, 2, 2], "B": [2, 0, 2, 0, 0], "C": [0, 0, 0, 0, 0]},
    "likes B": {"A": [2, 2, 0, 2, 0], "B": [0, 0, 0, 2, 2], "C": [0, 0, 0, 1, 1]},
}


def write_tiny(folder: Path) -> Path:
    """An ML-100K layout of ``TASTES`` (``u.genre``, ``u.item``, ``u.data``)."""
    folder.mkdir(parents=True, exist_ok=True)
    names = ("unknown", *GENRES)
    (folder / "u.genre").write_text("".join(f"{g}|{i}\n" for i, g in enumerate(names)))
    items = []
    for movie, genres in MOVIES.items():
        flags = [int(not genres), *(int(g in genres) for g in GENRES)]
        items.append(
            f"{movie}|Movie {movie} (1999)|01-Jan-1999||http://x|{'|'.join(map(str, flags))}\n"
        )
    (folder / "u.item").write_text("".join(items))
    rows = [f"{u}\t{m}\t{v}\t8812{u}{m}\n" for u, rated in TASTES.items() for m, v in rated.items()]
    (folder / "u.data").write_text("".join(rows))
    return folder


@pytest.fixture
def tiny(tmp_path: Path) -> MovieLensGenresParams:
    folder = write_tiny(tmp_path / "tiny")
    return MovieLensGenresParams(
        data_dir=str(folder), cache_dir=str(tmp_path / "cache"), min_user_ratings=1,
        n_states=2, n_arms=3, horizon=200,
    )  # fmt: skip


def _by_taste(obs: np.ndarray) -> dict[str, np.ndarray]:
    """The states' rows named by taste: the state whose users rate A higher likes A."""
    likes_a = int(obs[0, 0] @ np.arange(5) < obs[1, 0] @ np.arange(5))
    return {"likes A": obs[likes_a], "likes B": obs[1 - likes_a]}


def test_o_is_the_add_one_frequency_of_each_rating_in_each_cluster(
    tiny: MovieLensGenresParams,
) -> None:
    obs, rewards = model(tiny, load(tiny))
    assert obs.shape == (2, 3, 5)
    np.testing.assert_allclose(obs.sum(axis=2), 1.0)
    for taste, rows in _by_taste(obs).items():
        for a, genre in enumerate(GENRES):
            counts = np.array(COUNTS[taste][genre], dtype=float)
            np.testing.assert_allclose(rows[a], (counts + 1) / (counts.sum() + 5))
    np.testing.assert_allclose(rewards, [0, 0.25, 0.5, 0.75, 1])
    authors = MovieLensGenresParams(**{**tiny.__dict__, "rewards": "authors"})
    np.testing.assert_allclose(model(authors, load(authors))[1], [0.2, 0.4, 0.6, 0.8, 1])


def test_a_genre_a_cluster_never_rated_has_uniform_outcomes(tiny: MovieLensGenresParams) -> None:
    obs, _ = model(tiny, load(tiny))
    np.testing.assert_allclose(_by_taste(obs)["likes A"][2], np.full(5, 0.2))


def test_the_clusters_are_the_states_and_each_seed_draws_its_transitions(
    tiny: MovieLensGenresParams,
) -> None:
    data = load(tiny)
    assert data.cluster_sizes.tolist() == [2, 2] and data.genre_names == GENRES
    world = MovieLensGenres.build(tiny, np.array([0, 1]))
    obs, _ = model(tiny, data)
    np.testing.assert_array_equal(world.emissions, np.stack([obs, obs]))
    assert set(np.unique(world.states)) == {0, 1}
    assert not np.allclose(world.offline_model.transitions[0], world.offline_model.transitions[1])
    np.testing.assert_allclose(world.offline_model.transitions.sum(axis=2), 1.0)


def test_a_seeds_world_is_the_same_alone_and_in_a_batch(tiny: MovieLensGenresParams) -> None:
    batch = MovieLensGenres.build(tiny, np.array([4, 9, 2]))
    alone = MovieLensGenres.build(tiny, np.array([9]))
    for name in ("states", "noise", "mean_rewards", "emissions"):
        np.testing.assert_array_equal(getattr(batch, name)[1], getattr(alone, name)[0])
    np.testing.assert_array_equal(
        batch.offline_model.transitions[1], alone.offline_model.transitions[0]
    )


def test_a_damaged_cache_is_rebuilt(
    tiny: MovieLensGenresParams, capsys: pytest.CaptureFixture
) -> None:
    from nslb_cli.envs.movielens_genres import _load

    first = load(tiny).counts
    (cached,) = (Path(tiny.cache_dir or "") / "prepared").glob("movielens-genres-*.npz")
    cached.write_bytes(cached.read_bytes()[:-40])
    _load.cache_clear()
    np.testing.assert_array_equal(load(tiny).counts, first)
    assert "damaged prepared-data cache" in capsys.readouterr().err


def test_a_release_without_genres_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "plain"
    folder.mkdir()
    rows = [{"user": u, "item": m, "rating": v} for u, r in TASTES.items() for m, v in r.items()]
    pd.DataFrame(rows).to_csv(folder / "ratings.csv", index=False)
    p = MovieLensGenresParams(data_dir=str(folder), cache_dir=str(tmp_path), min_user_ratings=1)
    with pytest.raises(DataError, match="no rated movie has a genre"):
        load(p)


def test_more_states_than_user_profiles_or_arms_than_genres_are_refused(
    tiny: MovieLensGenresParams,
) -> None:
    with pytest.raises(DataError, match="n_states=4, but .* has 3 distinct user profiles"):
        load(MovieLensGenresParams(**{**tiny.__dict__, "n_states": 4}))
    with pytest.raises(ConfigError, match="n_states: must be from 1 to 64"):
        MovieLensGenresParams(**{**tiny.__dict__, "n_states": 10**6})
    with pytest.raises(ConfigError, match="4 arms, but the release has 3 genres"):
        MovieLensGenres.build(MovieLensGenresParams(**{**tiny.__dict__, "n_arms": 4}), np.arange(1))


def test_a_refusal_is_one_line(tiny: MovieLensGenresParams, tmp_path: Path) -> None:
    done = nslb(
        "run", "env=movielens_genres", f"env.data_dir={tiny.data_dir}", "env.n_states=4",
        "env.n_arms=3", "env.min_user_ratings=1", f"env.cache_dir={tmp_path}", *QUICK,
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode != 0
    (line,) = said(done.stderr)
    assert line.startswith("nslb: ") and "lower env.n_states" in line


def test_ratings_of_unlisted_movies_are_counted_in_one_line_and_in_data_json(
    tiny: MovieLensGenresParams, tmp_path: Path
) -> None:
    ratings = Path(tiny.data_dir or "") / "u.data"
    ratings.write_text(ratings.read_text() + "1\t7\t5\t1\n3\t7\t1\t2\n")  # u.item lacks 7
    done = nslb(
        "run", "env=movielens_genres", f"env.data_dir={tiny.data_dir}", "env.n_states=2",
        "env.n_arms=3", "env.min_user_ratings=1", f"env.cache_dir={tmp_path}", *QUICK,
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (line,) = [line for line in (done.stdout + done.stderr).splitlines() if "movie list" in line]
    assert "2 of 24 ratings" in line
    (record,) = (tmp_path / "outputs").rglob("data.json")
    assert json.loads(record.read_text())["diagnostics"]["ratings_kept"] == {
        "read": 24, "of_a_listed_movie": 22, "of_a_kept_user": 22, "of_a_movie_with_a_genre": 18
    }  # fmt: skip  # 22 listed, of which the 4 of movie 5 have no genre


@needs_ml_100k
def test_sl_ec_runs_on_ml100k_offline_with_three_seeds(tmp_path: Path) -> None:
    done = nslb(
        "run", "env=movielens_genres", f"env.data_dir={ML_100K}", f"env.cache_dir={tmp_path}",
        "agent=sl_ec", "run.n_seeds=3", *QUICK, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (folder,) = (tmp_path / "outputs").rglob("data.json")
    record = json.loads(folder.read_text())
    assert len(record["diagnostics"]["arms"]) == 18 and record["release"] == "ml-100k"
    assert sum(record["diagnostics"]["cluster_sizes"]) == 943
    frames = [pd.read_csv(f) for f in sorted(folder.parent.glob("seed=*.csv"))]
    assert len(frames) == 3
    for frame in frames:
        assert set(frame["reward"]) <= {0.0, 0.25, 0.5, 0.75, 1.0} and len(frame) == 60


@pytest.mark.parametrize("agent", ["sl_ec", "umts"])
def test_the_agents_of_switching_latent_pass_nslb_check(
    agent: str, tiny: MovieLensGenresParams, tmp_path: Path
) -> None:
    done = nslb(
        "check", f"agent={agent}", "env=movielens_genres", f"env.data_dir={tiny.data_dir}",
        "env.n_states=2", "env.n_arms=3", "env.min_user_ratings=1", f"env.cache_dir={tmp_path}",
        "env.horizon=120", *(["agent.num_particles=10"] if agent == "umts" else []),
        cwd=tmp_path,
    )  # fmt: skip  # the checks' own horizon, not the environment's 10,000 rounds
    assert done.returncode == 0, done.stdout + done.stderr
    assert "checks passed" in done.stdout.splitlines()[-1]
