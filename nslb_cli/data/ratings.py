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
* ``generic`` (your own ratings): ``ratings.csv`` with the header ``user,item,rating`` (any
  ids, integers or text; ratings on any numeric scale; further columns such as a
  ``timestamp`` are ignored) and, optionally, ``items.csv`` with the header ``item,genres``
  (genres ``|``-separated). Without ``items.csv`` no item has a genre.

A movie listed with ``(no genres listed)`` (CSV releases) or only ``unknown`` (ML-100K) has
no genre. A rated movie missing from the movie list also has none. Genres come out in
sorted order (ML-100K: the order of ``u.genre``). CSV files are parsed with pyarrow.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from nslb_cli.data import DataError

NO_GENRE = frozenset({"(no genres listed)", "unknown"})
MAX_RATING = 1e6
"""The largest rating magnitude accepted. Ratings are any numbers on any scale (stars,
points, prices), but nothing real is rated in the millions, and ALS computes in float32:
its Gram matrices and right-hand sides hold sums of squared ratings, which overflow
float32 (3.4e38) from ratings of about 1e17 (tested: 1e19 gives NaN factors). At 1e6 the
factors, rewards ``U_i · V_j`` and their squares over the smallest noise variance (1e-12)
stay far inside every range. A file beyond it is refused, naming the largest value."""
MOVIELENS_CSV = ("userId", "movieId", "rating")
GENERIC = ("user", "item", "rating")
GENERIC_ITEMS = ("item", "genres")


@dataclass(frozen=True)
class Layout:
    """Which files of a folder hold the ratings and the movies, in which format."""

    format: str
    ratings: Path
    movies: Path | None
    extra: tuple[Path, ...] = ()

    @property
    def files(self) -> tuple[Path, ...]:
        """Every file read, in a fixed order (the source identity of the cache key)."""
        return tuple(f for f in (self.ratings, self.movies, *self.extra) if f is not None)


@dataclass(frozen=True)
class Ratings:
    """A release's ratings and the genres of its movies.

    Attributes:
        users, items: ``(N,)`` raw user and movie ids of each rating (integers, or text in
            the generic format).
        values: ``(N,)`` the ratings (float32).
        movie_ids: ``(M,)`` sorted raw ids of the movies with genre information.
        genres: ``(M, G)`` boolean, movie ``movie_ids[m]`` has genre ``genre_names[g]``.
        genre_names: the ``G`` genre names (none in a generic folder without ``items.csv``).
        source: the ratings file, and ``header``, its lines before the first rating.
    """

    users: np.ndarray
    items: np.ndarray
    values: np.ndarray
    movie_ids: np.ndarray
    genres: np.ndarray
    genre_names: tuple[str, ...]
    source: Path | None = None
    header: int = 0

    def lines(self, rows: np.ndarray) -> str:
        """Where ratings ``rows`` are, for people: ``path, lines 7, 602`` (a blank line holds
        no rating: the parsers skip it)."""
        if self.source is None:
            return "the ratings"
        wanted, found, record = set((np.asarray(rows) + self.header).tolist()), [], 0
        with open(self.source, "rb") as handle:
            for number, line in enumerate(handle, 1):
                if line.strip():
                    found += [str(number)] if record in wanted else []
                    record += 1
        return f"{self.source}, lines {', '.join(found)}"

    def listed(self, items: np.ndarray) -> np.ndarray:
        """``(len(items),)`` whether the movie list lists each raw movie id."""
        return np.isin(items, self.movie_ids)

    def genres_of(self, items: np.ndarray) -> np.ndarray:
        """``(len(items), G)`` genre flags of raw movie ids (no genre if not listed)."""
        if len(self.movie_ids) == 0:
            return np.zeros((len(items), len(self.genre_names)), dtype=bool)
        where = np.searchsorted(self.movie_ids, items)
        where = np.minimum(where, len(self.movie_ids) - 1)
        flags = self.genres[where]
        flags[~self.listed(items)] = False
        return flags


LAYOUTS = (
    ("ml-100k", "u.data", "u.item", ("u.genre",)),
    ("ml-1m", "ratings.dat", "movies.dat", ()),
    ("csv", "ratings.csv", "movies.csv", ()),
)


def detect(folder: Path) -> Layout:
    """The layout of a release folder; ``DataError`` if it is not one.

    A ``ratings.csv`` whose header names ``user,item,rating`` is the generic format; any
    other ``ratings.csv`` is a MovieLens CSV release.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise DataError("env.data_dir", f"{folder}: not a folder")
    ratings_csv = folder / "ratings.csv"
    header = set(_header(ratings_csv)) if ratings_csv.is_file() else set()
    if set(GENERIC) <= header:
        items = folder / "items.csv"
        return Layout("generic", ratings_csv, items if items.is_file() else None)
    if header and not set(MOVIELENS_CSV) <= header:
        raise _problem(
            ratings_csv,
            f"expected a header with columns {','.join(GENERIC)} (your own ratings) or "
            f"{','.join(MOVIELENS_CSV)} (a MovieLens CSV release)",
        )
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
        "env.data_dir",
        f"{folder}: no ratings file found (expected one of: {expected}; or your own "
        "ratings.csv with the header user,item,rating)",
    )


def read_release(folder: Path, layout: Layout | None = None) -> Ratings:
    """Parse the release in ``folder``; ``DataError`` naming the file on any problem."""
    layout = layout or detect(folder)
    if layout.format == "ml-100k":
        assert layout.movies is not None  # detect() finds u.item beside u.data
        frame = _table(layout.ratings, "\t", 4, "user, item, rating, timestamp", "latin-1")
        users, items, values = _ratings(layout.ratings, frame[0], frame[1], frame[2])
        movie_ids, genres, names = _ml100k_movies(layout.movies, layout.extra[0])
    elif layout.format == "ml-1m":
        assert layout.movies is not None  # detect() finds movies.dat beside ratings.dat
        frame = _table(layout.ratings, "::", 4, "user::item::rating::timestamp", "latin-1")
        users, items, values = _ratings(layout.ratings, frame[0], frame[1], frame[2])
        movies = _table(layout.movies, "::", 3, "item::title::genres", "latin-1", str)
        movie_ids, genres, names = _split_genres(layout.movies, movies[0], movies[2])
    else:
        movielens = layout.format == "csv"
        columns = MOVIELENS_CSV if movielens else GENERIC
        table = _csv(layout.ratings, columns, "int32" if movielens else "infer")
        if not movielens:
            table = _whole_ids(layout.ratings, columns, table)
        users, items, values = _ratings(layout.ratings, *(table[c] for c in columns))
        if layout.movies is None:
            movie_ids, genres, names = items[:0], np.zeros((0, 0), dtype=bool), ()
        else:
            movie_columns = ("movieId", "genres") if movielens else GENERIC_ITEMS
            movies = _csv(layout.movies, movie_columns, "text")
            ids = movies[movie_columns[0]]
            text = items.dtype.kind == "U"  # generic ids: as in ratings.csv
            movie_ids, genres, names = _split_genres(layout.movies, ids, movies["genres"], text)
    header = 0 if layout.format in ("ml-100k", "ml-1m") else 1
    return Ratings(users, items, values, movie_ids, genres, names, layout.ratings, header)


def _problem(path: Path, message: str) -> DataError:
    return DataError("env.data_dir", f"{path}: {message}")


def _header(path: Path) -> list[str]:
    try:
        with open(path, encoding="utf-8-sig") as handle:
            return [c.strip().strip('"') for c in handle.readline().strip().split(",")]
    except (OSError, UnicodeDecodeError) as err:
        raise _problem(path, f"cannot read ({err})") from None


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


def _csv(
    path: Path, needed: tuple[str, ...], ids: str, exact: bool = False
) -> dict[str, np.ndarray]:
    """The ``needed`` columns of a CSV file with a header, as numpy arrays (pyarrow parser).

    Id columns are read as ``ids``: ``"int32"``, ``"text"`` or ``"infer"``; ``rating`` as
    float32 (float64 if ``exact``, or if float32 overflows, so that the refusal names the
    value in the file); ``genres`` as text.
    """
    from pyarrow import ArrowInvalid, csv, float32, float64, int32, string

    id_type = {"int32": int32(), "text": string(), "infer": None}[ids]
    rating = float64() if exact else float32()
    types = {c: {"rating": rating, "genres": string()}.get(c, id_type) for c in needed}
    missing = [c for c in needed if c not in _header(path)]
    if missing:
        raise _problem(path, f"expected a header with columns {', '.join(needed)}")
    try:
        table = csv.read_csv(
            path,
            convert_options=csv.ConvertOptions(
                include_columns=list(needed),
                column_types={c: t for c, t in types.items() if t is not None},
                strings_can_be_null=False,
                quoted_strings_can_be_null=False,
            ),
        )
    except (ArrowInvalid, OSError, UnicodeDecodeError) as err:
        reason = str(err).splitlines()[0]
        raise _problem(
            path, f"not a CSV file with columns {', '.join(needed)} ({reason})"
        ) from None
    if table.num_rows == 0:
        raise _problem(path, "no rows")
    columns = {c: _numpy(table.column(c)) for c in needed}
    if not exact and "rating" in columns and np.isinf(columns["rating"]).any():
        columns["rating"] = _csv(path, ("rating",), ids, exact=True)["rating"]
    return columns


def _whole_ids(
    path: Path, columns: tuple[str, ...], table: dict[str, np.ndarray]
) -> dict[str, np.ndarray]:
    """Your own ids as the file means them: integers written as floats (``196.0``, as pandas
    writes an integer column that held a NaN) as integers; ids that float64 cannot hold
    exactly (2^53 and above) as text, read again so that no two of them merge."""
    floats = [c for c in ("user", "item") if table[c].dtype.kind == "f"]
    whole = all(
        np.all(np.isfinite(table[c]) & (np.abs(table[c]) < 2.0**53))
        and np.all(table[c] == np.round(table[c]))
        for c in floats
    )
    if whole:
        return table | {c: table[c].astype(np.int64) for c in floats}
    text = _csv(path, columns, "text")
    return table | {c: text[c] for c in floats}


def _numpy(column: Any) -> np.ndarray:  # a pyarrow ChunkedArray
    array = column.to_numpy()
    return array.astype(str) if array.dtype == object else array


def _ratings(
    path: Path, users: np.ndarray, items: np.ndarray, values: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """User, movie and rating columns as numbers (ids as text kept as text), checked."""
    try:
        users, items = (
            ids if ids.dtype.kind in "iuU" else pd.to_numeric(ids).to_numpy()
            for ids in (np.asarray(users), np.asarray(items))
        )
        numbers = np.asarray(pd.to_numeric(np.asarray(values)))
    except (ValueError, TypeError) as err:
        raise _problem(path, f"expected numeric user, movie and rating columns ({err})") from None
    if len(numbers) == 0:
        raise _problem(path, "no ratings")
    for name, ids in (("user", users), ("movie", items)):
        if ids.dtype.kind not in "iuU":
            raise _problem(path, f"expected integer {name} ids, found {ids.dtype} values")
    _check_magnitude(path, numbers)
    if numbers.min() == numbers.max():
        raise _problem(
            path,
            f"every rating is {float(numbers[0]):g}: ratings that never differ (a click log's "
            "1s) tell no user's taste from another's; give ratings that vary",
        )
    return _compact(users), _compact(items), numbers.astype(np.float32, copy=False)


def _check_magnitude(path: Path, numbers: np.ndarray) -> None:
    """Refuse ratings that are not finite numbers or exceed ``MAX_RATING`` in magnitude,
    naming the largest (checked before the cast to float32, which would turn it to inf)."""
    if numbers.dtype.kind == "f" and np.isnan(numbers).any():
        raise _problem(path, "ratings must be finite numbers, found nan")
    largest = max(abs(float(numbers.max())), abs(float(numbers.min())))
    if not largest <= MAX_RATING:
        raise _problem(
            path,
            f"ratings must be finite numbers at most {MAX_RATING:g} in magnitude (larger ones "
            f"overflow the factorisation's float32 arithmetic), found {largest:g}",
        )


def _compact(ids: np.ndarray) -> np.ndarray:
    """Integer ids in the narrowest of int32/int64 that holds them; text ids unchanged."""
    if ids.dtype.kind == "U" or ids.dtype == np.int32:
        return ids
    small = len(ids) == 0 or (ids.min() >= -(2**31) and ids.max() < 2**31)
    return ids.astype(np.int32 if small else np.int64)


def _ml100k_movies(items: Path, genre_file: Path) -> tuple[np.ndarray, np.ndarray, tuple]:
    """``u.item`` genre flags, named by ``u.genre``."""
    names: list[str] = []
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
    path: Path, ids: np.ndarray | pd.Series, genres: np.ndarray | pd.Series, text: bool = False
) -> tuple[np.ndarray, np.ndarray, tuple]:
    """Movie ids (integers, or text if ``text``) and ``|``-separated genre lists as a flag
    matrix."""
    try:
        movie_ids = np.asarray(ids).astype(str if text else np.int64)
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
