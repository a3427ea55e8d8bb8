"""Your own ratings (``user,item,rating`` + optional ``items.csv``), rating scales other than
whole stars, and the fingerprint of the ratings file."""

from __future__ import annotations

import hashlib
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from nslb_cli.data import DataError
from nslb_cli.data.prepare import GRID, load_or_prepare, prepare
from nslb_cli.data.ratings import detect, read_release
from nslb_cli.envs.movielens import ALL_MOVIES, Catalogue, MovieLens, load
from tests.helpers.movielens import (
    GENRES,
    TINY,
    tiny_env_params,
    tiny_release,
    write_csv,
    write_generic,
)


def test_generic_folder_with_genres_round_trips(tmp_path: Path) -> None:
    truth = tiny_release()
    folder = write_generic(truth, tmp_path)
    layout = detect(folder)
    assert layout.format == "generic" and layout.files == (
        folder / "ratings.csv",
        folder / "items.csv",
    )
    ratings = read_release(folder)
    np.testing.assert_array_equal(ratings.users, truth.users)
    np.testing.assert_array_equal(ratings.items, truth.items)
    np.testing.assert_array_equal(ratings.values, truth.values)
    assert ratings.genre_names == tuple(sorted(GENRES))
    order = [GENRES.index(g) for g in ratings.genre_names]
    np.testing.assert_array_equal(ratings.genres_of(truth.movie_ids), truth.genres[:, order])


def test_generic_text_ids_without_genres_offer_every_kept_movie(tmp_path: Path) -> None:
    truth = tiny_release()
    folder = write_generic(truth, tmp_path, genres=False, text_ids=True)
    layout = detect(folder)
    assert layout.format == "generic" and layout.movies is None
    ratings = read_release(folder)
    assert ratings.users[0] == f"u{truth.users[0]}" and ratings.items[0] == f"m{truth.items[0]}"
    assert ratings.genre_names == () and ratings.genres_of(ratings.items[:3]).shape == (3, 0)
    data = prepare(ratings, TINY)
    assert all(str(m).startswith("m") for m in data.movie_ids)
    assert data.diagnostics["movies_without_genre"] == len(data.movie_ids)
    catalogue = Catalogue.of(data)
    assert catalogue.names == (ALL_MOVIES,)
    np.testing.assert_array_equal(catalogue.movies, np.arange(len(data.movie_ids)))
    _, movies = catalogue.sample(np.random.default_rng(0), 5000, 4)
    share = np.bincount(movies.ravel(), minlength=len(data.movie_ids)) / movies.size
    expected = 1 / len(data.movie_ids)
    assert np.all(np.abs(share - expected) < 4.5 * np.sqrt(expected / movies.size))


def test_generic_ratings_need_the_three_columns(tmp_path: Path) -> None:
    (tmp_path / "ratings.csv").write_text("user,item,rating\nu1,m1,4\nu1,m2,x\n")
    with pytest.raises(DataError, match="invalid value 'x'"):
        read_release(tmp_path)
    (tmp_path / "ratings.csv").write_text("user,item\nu1,m1\n")
    with pytest.raises(DataError, match="expected a header with columns user,item,rating "):
        read_release(tmp_path)


def test_half_stars_are_kept_exactly_and_set_the_scale(tmp_path: Path) -> None:
    truth = tiny_release(half_stars=True)
    assert {0.5, 4.5} <= set(truth.values) and set(2 * truth.values) <= set(range(1, 11))
    ratings = read_release(write_csv(truth, tmp_path))
    np.testing.assert_array_equal(ratings.values, truth.values)
    data = prepare(ratings, TINY)
    kept = truth.values  # every rating of the tiny release survives the filter
    assert data.diagnostics["filtered"]["ratings"] == len(kept)
    assert data.diagnostics["scale"] == {"min": 0.5, "max": 5.0, "step": 0.5}


def test_rewards_follow_the_rating_scale(tmp_path: Path) -> None:
    """The same ratings on a 0.5–5 and on a 10–100 scale (× 20): the world's mean rewards
    and the chosen penalty scale with them; nothing assumes 1–5 stars."""
    worlds, penalties = {}, {}
    for scale in (1.0, 20.0):
        root = tmp_path / f"x{scale:g}"
        params = tiny_env_params(root, horizon=200)
        write_csv(tiny_release(half_stars=True, scale=scale), Path(params.data_dir))
        params = replace(params, als_reg="auto", sigma=0.5 * scale)
        d = load(params).data.diagnostics
        assert d["scale"]["max"] == 5.0 * scale and d["scale"]["step"] == 0.5 * scale
        penalties[scale] = d["penalty"]["chosen"]
        worlds[scale] = MovieLens.build(params, np.arange(3))
    ratio = worlds[20.0].mean_rewards.mean() / worlds[1.0].mean_rewards.mean()
    assert 18 < ratio < 22
    assert 1.2 < worlds[1.0].mean_rewards.mean() < 4.5
    assert penalties[20.0] / penalties[1.0] in (16.0, 32.0), penalties  # 20 on the grid x2
    assert {penalties[1.0], penalties[20.0]} <= set(GRID)


def test_fingerprint_is_the_ratings_file_and_changes_with_one_rating(tmp_path: Path) -> None:
    folder = write_csv(tiny_release(), tmp_path / "release")
    root = tmp_path / "cache"
    first = load_or_prepare(folder, TINY, root)
    source = first.data.diagnostics["source"]
    digest = hashlib.sha256((folder / "ratings.csv").read_bytes()).hexdigest()
    assert source["fingerprint"] == digest and source["files"]["ratings.csv"] == digest
    lines = (folder / "ratings.csv").read_text().splitlines(keepends=True)
    user, movie, rating, stamp = lines[1].split(",")
    lines[1] = ",".join([user, movie, "1.0" if float(rating) != 1 else "2.0", stamp])
    (folder / "ratings.csv").write_text("".join(lines))
    changed = load_or_prepare(folder, TINY, root)
    assert not changed.hit and changed.path != first.path
    assert changed.data.diagnostics["source"]["fingerprint"] != source["fingerprint"]
    with open(folder / "movies.csv", "a") as handle:  # other files: same fingerprint, new key
        handle.write('9999,"Another (2000)",Drama\n')
    renamed = load_or_prepare(folder, TINY, root)
    assert not renamed.hit
    assert (
        renamed.data.diagnostics["source"]["fingerprint"]
        == changed.data.diagnostics["source"]["fingerprint"]
    )


def test_a_movie_rated_twice_by_a_user_is_named_with_its_file_and_lines(tmp_path: Path) -> None:
    """The refusal names the file, the lines (a blank line holds no rating), the user and
    the movie, with the count of repeated ratings."""
    truth = tiny_release()
    folder = write_generic(truth, tmp_path)
    ratings = folder / "ratings.csv"
    lines = ratings.read_text().splitlines(keepends=True)
    repeated = f"{truth.users[5]},{truth.items[5]},3,9999\n"
    ratings.write_text("".join([*lines[:3], "\n", *lines[3:], repeated, repeated]))
    with pytest.raises(DataError) as refused:
        prepare(read_release(folder), TINY)
    assert str(refused.value) == (
        f"env.data_dir: {ratings}, lines 8, {len(lines) + 2}, {len(lines) + 3}: user "
        f"{truth.users[5]} rated movie {truth.items[5]} 3 times (2 repeated ratings in all); "
        "keep one rating per user and movie"
    )


def test_ratings_that_are_all_the_same_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A click log (every rating 1) tells no user from another: refused naming the file;
    kept ratings that are all the same (here: built as the file check is bypassed) are
    refused too, also when they were prepared and cached before."""
    truth = tiny_release()
    clicks = replace(truth, values=np.ones_like(truth.values))
    folder = write_generic(clicks, tmp_path / "clicks")
    with pytest.raises(DataError, match=rf"^env.data_dir: {folder / 'ratings.csv'}: every rat"):
        read_release(folder)
    same = replace(read_release(write_generic(truth, tmp_path / "mine")), values=clicks.values)
    with pytest.raises(DataError, match=r"^env.data_dir: every kept rating is 1: ratings that"):
        prepare(same, TINY)
    with monkeypatch.context() as bypass:
        bypass.setattr("nslb_cli.data.prepare.refuse_no_signal", lambda scale: None)
        bypass.setattr("nslb_cli.data.prepare.read_release", lambda folder, layout: same)
        assert not load_or_prepare(folder, TINY, tmp_path / "cache").hit
    with pytest.raises(DataError, match=r"every kept rating is 1"):
        load_or_prepare(folder, TINY, tmp_path / "cache")


def test_a_byte_order_mark_is_read_as_excel_writes_it(tmp_path: Path) -> None:
    """Excel's "CSV UTF-8" starts ratings.csv and items.csv with a byte-order mark: read as
    the same release (it was refused as a missing header)."""
    truth = tiny_release()
    plain = read_release(write_generic(truth, tmp_path / "plain"))
    folder = write_generic(truth, tmp_path / "bom")
    for name in ("ratings.csv", "items.csv"):
        path = folder / name
        path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    marked = read_release(folder)
    np.testing.assert_array_equal(marked.users, plain.users)
    np.testing.assert_array_equal(marked.values, plain.values)
    np.testing.assert_array_equal(marked.genres, plain.genres)
    assert marked.genre_names == plain.genre_names


def test_ids_written_as_floats_or_beyond_int64_are_read_exactly(tmp_path: Path) -> None:
    """``196.0`` (pandas' integers after a NaN) is user 196; ids of 2^63 and more are kept
    as text, two of them that differ only in the last digit kept apart (they were an
    AttributeError)."""
    truth = tiny_release()
    plain = read_release(write_generic(truth, tmp_path / "plain"))
    folder = write_generic(truth, tmp_path / "floats", genres=False)
    lines = (folder / "ratings.csv").read_text().splitlines()
    rows = [line.split(",") for line in lines[1:]]
    floats = [lines[0]] + [f"{u}.0,{i}.0,{v},{k}" for u, i, v, k in rows]
    (folder / "ratings.csv").write_text("\n".join(floats) + "\n")
    read = read_release(folder)
    np.testing.assert_array_equal(read.users, plain.users)
    np.testing.assert_array_equal(read.items, plain.items)
    huge = [lines[0], "18446744073709551615,1,3,0", "18446744073709551614,1,4,1"]
    (folder / "ratings.csv").write_text("\n".join(huge) + "\n")
    read = read_release(folder)
    assert list(read.users) == ["18446744073709551615", "18446744073709551614"]
