"""Where MovieLens data lives: the cache folder, and known releases downloaded on first use.

The cache folder is, in order of precedence: ``env.cache_dir``, the ``NSLB_CACHE``
environment variable, or the user cache folder of the platform (``pooch.os_cache("nslb")``,
e.g. ``~/.cache/nslb`` on Linux). It holds ``downloads/`` (release archives and their
unzipped folders) and ``prepared/`` (the prepared arrays, see ``prepare``).

Only releases whose archive checksum is pinned here are downloaded; any other release
(or a copy you already have) is used through ``env.data_dir``.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path

import pooch

from nslb_cli.common import validators as check
from nslb_cli.common.paths import user_cache
from nslb_cli.data import DataError, unzipped

BASE_URL = "https://files.grouplens.org/datasets/movielens"

# MD5 of each archive as published beside it (<release>.zip.md5). Pin a release here only
# after checking its published checksum: an unpinned release is used from a local folder.
RELEASES: dict[str, str] = {
    "ml-100k": "0e33842e24a9c977be4e0107933c0723",
    "ml-1m": "c4d9eecfca2ab87c1945afe126590906",
    "ml-25m": "6b51fb2759a8657d3bfcbfc42b592ada",
}

Downloader = Callable[[str, str, object], None]


def cache_root(cache_dir: str | None = None) -> Path:
    """The cache folder: ``cache_dir``, else ``$NSLB_CACHE``, else the user cache folder."""
    if cache_dir:
        return Path(cache_dir).expanduser()
    return user_cache()


def url(release: str) -> str:
    return f"{BASE_URL}/{release}.zip"


def check_source(release: str, data_dir: str | None) -> None:
    """Refuse (``ConfigError``) a ``release`` that is not downloaded, or a ``data_dir``
    that is not a folder: the data an environment's parameters name."""
    if data_dir is not None:
        folder = Path(data_dir).expanduser()
        check.require(folder.is_dir(), "data_dir", f"not a folder: {folder}")
        return
    check.require(release in RELEASES, "release", unknown_release_message(release))


def unknown_release_message(release: str) -> str:
    return (
        f"no pinned checksum for release '{release}', so it is not downloaded (known: "
        f"{', '.join(RELEASES)}); download and unzip {url(release)} yourself and set "
        "env.data_dir=<that folder>"
    )


def source_folder(release: str, data_dir: str | None, root: Path) -> Path:
    """The folder of the ratings: ``data_dir``, or ``release`` unzipped under ``root``."""
    return Path(data_dir).expanduser() if data_dir else fetch(release, root)


def fetch(release: str, root: Path, downloader: Downloader | None = None) -> Path:
    """The unzipped folder of ``release``, downloaded into ``root/downloads`` if missing.

    The archive is checked against its pinned MD5 by pooch (a mismatch deletes the
    download); an archive already in the cache is re-checked and re-downloaded if it does
    not match, and its unzipped files are checked against it (``.unzipped``). Raises
    ``DataError`` with one line on any failure.
    """
    if release not in RELEASES:
        raise DataError("env.release", unknown_release_message(release))
    import requests  # pooch's own dependency; imported here to keep start-up fast

    folder = root / "downloads"
    source = url(release)
    if downloader is None:
        downloader = pooch.HTTPDownloader(progressbar=sys.stderr.isatty())
    try:
        files = pooch.retrieve(
            source,
            known_hash=f"md5:{RELEASES[release]}",
            fname=f"{release}.zip",
            path=folder,
            processor=pooch.Unzip(extract_dir=release),
            downloader=downloader,
        )
    except ValueError as err:  # pooch's checksum mismatch
        if "hash" not in str(err):
            raise
        got = re.search(r"got ([0-9a-fA-F]+)", str(err))
        raise DataError(
            "env.release",
            f"{source}: checksum mismatch (expected md5 {RELEASES[release]}, got "
            f"{got.group(1) if got else '?'}); the download was deleted: retry, or download "
            "it yourself and set env.data_dir=<folder>",
        ) from None
    except (requests.exceptions.RequestException, OSError) as err:
        reason = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise DataError(
            "env.release",
            f"could not download {source} ({reason}); download and unzip it yourself and "
            "set env.data_dir=<folder>",
        ) from None
    unzipped.check(folder / f"{release}.zip", folder / release)
    return release_folder(folder / release, [Path(f) for f in files])


def release_folder(extracted: Path, files: list[Path]) -> Path:
    """The folder inside an unzipped archive that holds its data files.

    GroupLens archives hold one top-level folder (``ml-1m/ratings.dat``); the folder of the
    shallowest extracted file is the release folder.
    """
    if not files:
        raise DataError("env.release", f"{extracted}: the archive is empty")
    shallowest = min(files, key=lambda f: (len(f.relative_to(extracted).parts), str(f)))
    return shallowest.parent
