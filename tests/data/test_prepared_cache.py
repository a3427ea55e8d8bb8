"""The prepared-data cache (nslb_cli.data.prepared_cache, through load_or_prepare): keyed by
settings and contents, mismatched files rebuilt (damaged ones, in 200+ ways:
tests/faults/test_caches.py)."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from nslb_cli.data.prepare import load_or_prepare
from tests.helpers.movielens import TINY, tiny_release, write_ml1m


@pytest.fixture
def release(tmp_path: Path) -> Path:
    return write_ml1m(tiny_release(), tmp_path / "release")


def test_cache_hit_and_miss_by_settings(release: Path, tmp_path: Path) -> None:
    root = tmp_path / "cache"
    first = load_or_prepare(release, TINY, root)
    assert not first.hit and first.path.is_file() and first.path.parent == root / "prepared"
    second = load_or_prepare(release, TINY, root)
    assert second.hit and second.path == first.path
    np.testing.assert_array_equal(second.data.test_users, first.data.test_users)
    assert second.data.genre_names == first.data.genre_names
    assert second.data.diagnostics == first.data.diagnostics
    for change in ({"als_iterations": 16}, {"data_seed": 3}, {"min_item_ratings": 29}):
        other = load_or_prepare(release, replace(TINY, **change), root)
        assert not other.hit and other.path != first.path, change
    assert len(list((root / "prepared").glob("*.npz"))) == 4
    assert not list((root / "prepared").glob(".*")), "no temporary files left behind"


def test_cache_key_follows_the_contents_not_the_path(release: Path, tmp_path: Path) -> None:
    root = tmp_path / "cache"
    first = load_or_prepare(release, TINY, root)
    copy = shutil.copytree(release, tmp_path / "copy")
    assert load_or_prepare(copy, TINY, root).path == first.path
    with open(copy / "ratings.dat", "a") as handle:
        handle.write("9999::4::5::978300000\n")
    changed = load_or_prepare(copy, TINY, root)
    assert not changed.hit and changed.path != first.path


def test_a_cache_file_of_other_settings_under_this_name_is_rebuilt(
    release: Path, tmp_path: Path
) -> None:
    root = tmp_path / "cache"
    first = load_or_prepare(release, TINY, root)
    other = load_or_prepare(release, replace(TINY, data_seed=9), root)
    shutil.copy(other.path, first.path)
    rebuilt = load_or_prepare(release, TINY, root)
    assert not rebuilt.hit
    np.testing.assert_array_equal(rebuilt.data.test_users, first.data.test_users)
