"""Downloading a release: pooch's checksum check on a real HTTP download from a local server
(loopback only), cached archives, unknown releases, and where the cache folder is."""

from __future__ import annotations

import functools
import hashlib
import http.server
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from nslb_cli.common import paths
from nslb_cli.data import DataError, releases
from nslb_cli.data.ratings import read_release
from nslb_cli.envs.movielens import MovieLens, MovieLensParams
from tests.helpers.movielens import tiny_release, write_ml100k


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """An HTTP server on 127.0.0.1 serving ``tmp_path/www``; yields (base URL, folder)."""
    www = tmp_path / "www"
    www.mkdir()
    handler = functools.partial(QuietHandler, directory=str(www))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", www
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


def publish(www: Path, tmp_path: Path, name: str = "ml-test") -> str:
    """A GroupLens-like archive ``name.zip`` (one top-level folder) in ``www``; its MD5."""
    folder = write_ml100k(tiny_release(), tmp_path / "src" / name)
    archive = www / f"{name}.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        for path in sorted(folder.iterdir()):
            zipped.write(path, f"{name}/{path.name}")
    return hashlib.md5(archive.read_bytes()).hexdigest()


@pytest.fixture
def mirror(server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str]:
    """The release ``ml-test`` published on the local server with its true MD5 pinned."""
    base, www = server
    md5 = publish(www, tmp_path)
    monkeypatch.setattr(releases, "BASE_URL", base)
    monkeypatch.setitem(releases.RELEASES, "ml-test", md5)
    return www, md5


def test_download_verifies_unzips_and_is_cached(mirror, tmp_path: Path) -> None:
    www, _ = mirror
    root = tmp_path / "cache"
    folder = releases.fetch("ml-test", root)
    assert folder == root / "downloads/ml-test/ml-test"
    assert (root / "downloads/ml-test.zip").is_file()
    assert len(read_release(folder).values) == len(tiny_release().values)
    (www / "ml-test.zip").unlink()  # the server no longer has it: the cache must serve
    assert releases.fetch("ml-test", root) == folder


def test_unzipped_files_changed_after_the_download_are_unzipped_again(
    mirror, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """pooch unzips once (again only when a file is missing); a release file cut short or
    edited in the cache later is restored from the verified archive (one warning line),
    never read as the release."""
    root = tmp_path / "cache"
    folder = releases.fetch("ml-test", root)
    original = {p.name: p.read_bytes() for p in folder.iterdir()}
    ratings = folder / "u.data"
    ratings.write_bytes(ratings.read_bytes()[: len(original["u.data"]) // 2])
    assert releases.fetch("ml-test", root) == folder
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == original
    warning = capsys.readouterr().err
    assert warning.count("\n") == 1 and f"{ratings} differs from the verified archive" in warning
    assert releases.fetch("ml-test", root) == folder
    assert capsys.readouterr().err == "", "intact files: no warning"
    lines = ratings.read_bytes().splitlines(keepends=True)
    ratings.write_bytes(b"".join(lines[:1] + [lines[1].replace(b"\t", b"\t9", 1)] + lines[2:]))
    releases.fetch("ml-test", root)
    assert ratings.read_bytes() == original["u.data"], "an edit of the same file, found too"


def test_checksum_mismatch_fails_in_one_line_and_keeps_nothing(
    mirror, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, md5 = mirror
    monkeypatch.setitem(releases.RELEASES, "ml-test", "0" * 32)
    root = tmp_path / "cache"
    with pytest.raises(DataError) as caught:
        releases.fetch("ml-test", root)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("env.release: http://127.0.0.1:")
    assert f"ml-test.zip: checksum mismatch (expected md5 {'0' * 32}, got {md5})" in message
    assert not (root / "downloads/ml-test.zip").exists()
    assert not (root / "downloads/ml-test").exists()


def test_corrupted_archive_in_the_cache_is_downloaded_again(mirror, tmp_path: Path) -> None:
    root = tmp_path / "cache"
    folder = releases.fetch("ml-test", root)
    (root / "downloads/ml-test.zip").write_bytes(b"corrupt")
    assert releases.fetch("ml-test", root) == folder
    _, md5 = mirror
    assert hashlib.md5((root / "downloads/ml-test.zip").read_bytes()).hexdigest() == md5


def test_server_without_the_file_fails_in_one_line(server, tmp_path, monkeypatch) -> None:
    base, _ = server
    monkeypatch.setattr(releases, "BASE_URL", base)
    monkeypatch.setitem(releases.RELEASES, "ml-test", "0" * 32)
    with pytest.raises(DataError) as caught:
        releases.fetch("ml-test", tmp_path / "cache")
    message = str(caught.value)
    assert "\n" not in message and "could not download" in message and "env.data_dir" in message


def test_unknown_release_is_refused_before_any_download(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="no pinned checksum for release 'ml-20m'"):
        releases.fetch("ml-20m", tmp_path)
    assert not any(tmp_path.iterdir())


def test_pinned_releases() -> None:
    assert releases.RELEASES == {
        "ml-100k": "0e33842e24a9c977be4e0107933c0723",
        "ml-1m": "c4d9eecfca2ab87c1945afe126590906",
        "ml-25m": "6b51fb2759a8657d3bfcbfc42b592ada",
    }
    assert releases.url("ml-1m") == "https://files.grouplens.org/datasets/movielens/ml-1m.zip"


def test_cache_root_precedence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(paths.CACHE_ENV, raising=False)
    default = releases.cache_root(None)
    assert default.name == "nslb"
    monkeypatch.setenv(paths.CACHE_ENV, str(tmp_path / "env"))
    assert releases.cache_root(None) == tmp_path / "env"
    assert releases.cache_root(str(tmp_path / "setting")) == tmp_path / "setting"


def test_environment_downloads_its_release(mirror, tmp_path: Path) -> None:
    """``env.data_dir=null``: the world is built from the downloaded, verified release."""
    params = MovieLensParams(
        release="ml-test",
        cache_dir=str(tmp_path / "cache"),
        min_user_ratings=20,
        min_item_ratings=30,
        rank=3,
        n_states=3,
        n_arms=4,
        horizon=30,
    )
    world = MovieLens.build(params, np.arange(2))
    assert world.items.shape == (2, 30, 4) and world.features.shape[1] == 3
    assert list((tmp_path / "cache/prepared").glob("movielens-*.npz"))
