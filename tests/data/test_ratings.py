"""Parsing MovieLens releases: ML-100K (the real one, if present), tiny ML-1M / CSV / ML-100K
folders with known contents, and one-line errors for missing or malformed files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from nslb_cli.data import DataError
from nslb_cli.data.ratings import detect, read_release
from tests.helpers.movielens import (
    GENRES,
    needs_ml_100k,
    tiny_release,
    write_csv,
    write_ml1m,
    write_ml100k,
)
from tests.helpers.paths import ML_100K


@needs_ml_100k
def test_ml100k_release() -> None:
    ratings = read_release(ML_100K)
    assert detect(ML_100K).format == "ml-100k"
    assert len(ratings.values) == 100_000
    assert len(np.unique(ratings.users)) == 943 and len(np.unique(ratings.items)) == 1682
    assert set(np.unique(ratings.values)) == {1.0, 2.0, 3.0, 4.0, 5.0}
    assert ratings.genre_names[0] == "Action" and len(ratings.genre_names) == 18, "no 'unknown'"
    toy_story = ratings.genres_of(np.array([1]))[
        0
    ]  # 1|Toy Story (1995)|…: Animation, Children's, Comedy
    assert [g for g, f in zip(ratings.genre_names, toy_story, strict=True) if f] == [
        "Animation",
        "Children's",
        "Comedy",
    ]
    first = (ratings.users[0], ratings.items[0], ratings.values[0])
    assert first == (196, 242, 3.0)  # the first line of u.data


WRITERS = {"ml-100k": write_ml100k, "ml-1m": write_ml1m, "csv": write_csv}


def test_tiny_release_round_trips(tmp_path: Path) -> None:
    """In every format nslb reads."""
    for fmt, writer in WRITERS.items():
        check_round_trip(fmt, writer(tiny_release(), tmp_path / fmt))


def check_round_trip(fmt: str, folder: Path) -> None:
    truth = tiny_release()
    ratings = read_release(folder)
    assert detect(folder).format == fmt
    np.testing.assert_array_equal(ratings.users, truth.users)
    np.testing.assert_array_equal(ratings.items, truth.items)
    np.testing.assert_array_equal(ratings.values, truth.values)
    assert ratings.genre_names == tuple(sorted(GENRES))
    flags = ratings.genres_of(truth.movie_ids)
    order = [GENRES.index(g) for g in ratings.genre_names]
    np.testing.assert_array_equal(flags, truth.genres[:, order])
    assert not flags[-1].any(), "no genres listed / unknown / not in the movie list"


def test_a_movie_missing_from_the_movie_list_has_no_genre(tmp_path: Path) -> None:
    ratings = read_release(write_ml1m(tiny_release(), tmp_path))  # ML-1M writer omits the last
    assert not ratings.genres_of(np.array([10_000, -3])).any()


def one_line_error(folder: Path) -> str:
    with pytest.raises(DataError) as caught:
        read_release(folder)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("env.data_dir: ")
    return message


def test_empty_or_absent_folder(tmp_path: Path) -> None:
    message = one_line_error(tmp_path)
    assert str(tmp_path) in message and "u.data + u.item" in message
    assert "not a folder" in one_line_error(tmp_path / "nowhere")


def test_missing_movie_file_is_named(tmp_path: Path) -> None:
    folder = write_ml100k(tiny_release(), tmp_path)
    (folder / "u.genre").unlink()
    message = one_line_error(folder)
    assert str(folder / "u.genre") in message and "u.data, u.item, u.genre" in message


MALFORMED = {
    "ratings.dat": ("1::2::3\n4::5::6\n", "expected 4 fields per line"),
    "movies.dat": ("1::Title\n", "expected 3 fields per line"),
}


def test_malformed_ml1m_file_is_named(tmp_path: Path) -> None:
    for name, (text, expected) in MALFORMED.items():
        folder = write_ml1m(tiny_release(), tmp_path / name)
        (folder / name).write_text(text)
        message = one_line_error(folder)
        assert str(folder / name) in message and expected in message


def test_non_numeric_ratings(tmp_path: Path) -> None:
    folder = write_ml1m(tiny_release(), tmp_path)
    (folder / "ratings.dat").write_text("1::2::good::3\n")
    assert "numeric" in one_line_error(folder)


def test_csv_without_expected_header(tmp_path: Path) -> None:
    folder = write_csv(tiny_release(), tmp_path)
    (folder / "ratings.csv").write_text("user,item,score\n1,2,3\n")
    message = one_line_error(folder)
    assert str(folder / "ratings.csv") in message and "userId,movieId,rating" in message


def test_ml100k_genre_file_checked(tmp_path: Path) -> None:
    folder = write_ml100k(tiny_release(), tmp_path)
    (folder / "u.genre").write_text("unknown|0\nAction|7\n")
    assert "line 2: expected 'name|1'" in one_line_error(folder)
    (folder / "u.genre").write_text("unknown|0\nAction|1\n")  # u.item has 6 flags, not 2
    assert "expected 7 fields per line" in one_line_error(folder)
