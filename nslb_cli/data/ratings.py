"""Parse a MovieLens release folder into ratings and movie genres.

The format is detected from the files present:

* ``ml-100k``: ``u.data`` (tab-separated user, item, rating, timestamp), ``u.item``
  (``|``-separated; the last 19 fields are genre flags), ``u.genre`` (``name|index``);
  latin-1.
* ``ml-1m`` (also ML-10M): ``ratings.dat`` (``user::item::rating::timestamp``) and
  ``movies.dat`` (``item::title::Genre1|Genre2``); latin-1.
* ``csv`` (ml-latest-small, ml-20m, ml-25m, …): ``ratings.csv`` (header
  ``userId,movieId,rating,timestamp``) and ``movies.csv`` (header ``movieId,title,genres``,
  genres ``|``-separated); UTF-8.

A movie listed with ``(no genres listed)`` (CSV releases) or only ``unknown`` (ML-100K) has
no genre. A rated movie missing from the movie list also has none. Genres come out in
sorted order (ML-100K: the order of ``u.genre``).
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from nslb_cli.data import DataError

NO_GENRE = frozenset({"(no genres listed)", "unknown"})
RATING_COLUMNS = ("user", "item", "rating")


@dataclass(frozen=True)
class Layout:
    """Which files of a folder hold the ratings and the movies, in which format."""

    format: str
    ratings: Path
    movies: Path
    extra: tuple[Path, ...] = ()

    @property
    def files(self) -> tuple[Path, ...]:
        """Every file read, in a fixed order (the source identity of the cache key)."""
        return (self.ratings, self.movies, *self.extra)


@dataclass(frozen=True)
class Ratings:
    """A release's ratings and the genres of its movies.

    Attributes:
        users, items: ``(N,)`` raw user and movie ids of each rating.
        values: ``(N,)`` the ratings.
        movie_ids: ``(M,)`` sorted raw ids of the movies with genre information.
        genres: ``(M, G)`` boolean, movie ``movie_ids[m]`` has genre ``genre_names[g]``.
        genre_names: the ``G`` genre names.
    """

    users: np.ndarray
    items: np.ndarray
    values: np.ndarray
    movie_ids: np.ndarray
    genres: np.ndarray
    genre_names: tuple[str, ...]

    def genres_of(self, items: np.ndarray) -> np.ndarray:
        """``(len(items), G)`` genre flags of raw movie ids (no genre if not listed)."""
        where = np.searchsorted(self.movie_ids, items)
        where = np.minimum(where, len(self.movie_ids) - 1)
        found = self.movie_ids[where] == items
        flags = self.genres[where]
        flags[~found] = False
        return flags


LAYOUTS = (
    ("ml-100k", "u.data", "u.item", ("u.genre",)),
    ("ml-1m", "ratings.dat", "movies.dat", ()),
    ("csv", "ratings.csv", "movies.csv", ()),
)


def detect(folder: Path) -> Layout:
    """The layout of a release folder; :class:`DataError` if it is not one."""
    folder = Path(folder)
    if not folder.is_dir():
        raise DataError("env.data_dir", f"{folder}: not a folder")
    for name, ratings, movies, extra in LAYOUTS:
        if (folder / ratings).is_file():
            missing = [f for f in (movies, *extra) if not (folder / f).is_file()]
            if missing:
                raise DataError(
                    "env.data_dir",
                    f"{folder / missing[0]}: missing; a {name} release has "
                    f"{', '.join((ratings, movies, *extra))}",
                )
            return Layout(name, folder / ratings, folder / movies, tuple(folder / f for f in extra))
    expected = "; ".join(f"{r} + {m}" for _, r, m, _ in LAYOUTS)
    raise DataError(
        "env.data_dir", f"{folder}: no MovieLens ratings file found (expected one of: {expected})"
    )


def read_release(folder: Path, layout: Layout | None = None) -> Ratings:
    """Parse the release in ``folder``; :class:`DataError` naming the file on any problem."""
    layout = layout or detect(folder)
    if layout.format == "ml-100k":
        frame = _table(layout.ratings, "\t", 4, "user, item, rating, timestamp", "latin-1")
        movie_ids, genres, names = _ml100k_movies(layout.movies, layout.extra[0])
    elif layout.format == "ml-1m":
        frame = _table(layout.ratings, "::", 4, "user::item::rating::timestamp", "latin-1")
        movies = _table(layout.movies, "::", 3, "item::title::genres", "latin-1", str)
        movie_ids, genres, names = _split_genres(layout.movies, movies[0], movies[2])
    else:
        frame = _csv(layout.ratings, ("userId", "movieId", "rating"))
        movies = _csv(layout.movies, ("movieId", "genres"), str)
        movie_ids, genres, names = _split_genres(layout.movies, movies["movieId"], movies["genres"])
        frame = frame.set_axis(range(3), axis=1)
    users, items, values = _ratings(layout.ratings, frame)
    return Ratings(users, items, values, movie_ids, genres, names)


def _problem(path: Path, message: str) -> DataError:
    return DataError("env.data_dir", f"{path}: {message}")


def _read_text(path: Path, encoding: str) -> str:
    try:
        return path.read_text(encoding=encoding)
    except (OSError, UnicodeDecodeError) as err:
        raise _problem(path, f"cannot read ({err})") from None


def _table(
    path: Path,
    separator: str,
    columns: int,
    expected: str,
    encoding: str,
    dtype: type | None = None,
) -> pd.DataFrame:
    """A header-less table with exactly ``columns`` fields per line."""
    text = _read_text(path, encoding)
    if separator != "\t":  # multi-character separators: fold to one character for speed
        if "\x1f" in text:
            raise _problem(path, "unexpected control character \\x1f")
        text = text.replace(separator, "\x1f")
        separator = "\x1f"
    try:
        frame = pd.read_csv(
            io.StringIO(text),
            sep=separator,
            header=None,
            dtype=dtype,
            quoting=3,  # csv.QUOTE_NONE: titles may contain quotes
            keep_default_na=False,
        )
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as err:
        raise _problem(path, f"expected lines '{expected}' ({str(err).strip()})") from None
    if frame.shape[1] != columns:
        raise _problem(
            path, f"expected {columns} fields per line ('{expected}'), found {frame.shape[1]}"
        )
    return frame


def _csv(path: Path, needed: tuple[str, ...], dtype: type | None = None) -> pd.DataFrame:
    try:
        frame = pd.read_csv(path, usecols=lambda c: c in needed, dtype=dtype, encoding="utf-8")
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as err:
        raise _problem(path, f"not a CSV file with header {','.join(needed)} ({err})") from None
    missing = [c for c in needed if c not in frame.columns]
    if missing:
        raise _problem(path, f"expected a header with columns {', '.join(needed)}")
    return frame[list(needed)]


def _ratings(path: Path, frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """User, movie and rating columns (the first three) as numbers, checked."""
    try:
        users = pd.to_numeric(frame[0], downcast=None).to_numpy()
        items = pd.to_numeric(frame[1], downcast=None).to_numpy()
        values = pd.to_numeric(frame[2]).to_numpy(dtype=np.float64)
    except (ValueError, TypeError) as err:
        raise _problem(path, f"expected numeric user, movie and rating columns ({err})") from None
    if len(values) == 0:
        raise _problem(path, "no ratings")
    for name, ids in (("user", users), ("movie", items)):
        if not np.issubdtype(ids.dtype, np.integer):
            raise _problem(path, f"expected integer {name} ids, found {ids.dtype} values")
    if not np.all(np.isfinite(values)):
        raise _problem(path, "ratings must be finite numbers")
    return users.astype(np.int64), items.astype(np.int64), values


def _ml100k_movies(items: Path, genre_file: Path) -> tuple[np.ndarray, np.ndarray, tuple]:
    """``u.item`` genre flags, named by ``u.genre``."""
    names = []
    for number, line in enumerate(_read_text(genre_file, "latin-1").splitlines(), 1):
        if not line.strip():
            continue
        name, _, index = line.rpartition("|")
        if not name or not index.strip().isdigit() or int(index) != len(names):
            raise _problem(genre_file, f"line {number}: expected 'name|{len(names)}'")
        names.append(name)
    if not names:
        raise _problem(genre_file, "no genres")
    expected = f"id|title|date|video date|url|{len(names)} genre flags"
    table = _table(items, "|", 5 + len(names), expected, "latin-1", str)
    try:
        ids = table[0].astype(np.int64).to_numpy()
        flags = table.iloc[:, 5:].astype(np.int64).to_numpy() == 1
    except ValueError:
        raise _problem(items, "expected an integer id and 0/1 genre flags") from None
    keep = [g for g, name in enumerate(names) if name not in NO_GENRE]
    return _sorted(ids, flags[:, keep], tuple(names[g] for g in keep), items)


def _split_genres(
    path: Path, ids: pd.Series, genres: pd.Series
) -> tuple[np.ndarray, np.ndarray, tuple]:
    """Movie ids and ``|``-separated genre lists as a flag matrix."""
    try:
        movie_ids = ids.astype(np.int64).to_numpy()
    except ValueError:
        raise _problem(path, "expected integer movie ids in the first column") from None
    lists = [[g for g in str(entry).split("|") if g and g not in NO_GENRE] for entry in genres]
    names = tuple(sorted({g for entry in lists for g in entry}))
    column = {name: g for g, name in enumerate(names)}
    flags = np.zeros((len(lists), len(names)), dtype=bool)
    for row, entry in enumerate(lists):
        flags[row, [column[g] for g in entry]] = True
    return _sorted(movie_ids, flags, names, path)


def _sorted(
    ids: np.ndarray, flags: np.ndarray, names: tuple, path: Path
) -> tuple[np.ndarray, np.ndarray, tuple]:
    order = np.argsort(ids, kind="stable")
    ids, flags = ids[order], flags[order]
    if np.any(ids[1:] == ids[:-1]):
        raise _problem(path, f"movie id {ids[1:][ids[1:] == ids[:-1]][0]} is listed twice")
    return ids, flags, names
