"""The JAX engine's compilation cache: announced once, kept in nslb's cache folder, and a
damaged cache costs a compilation, never a result.

On a CPU the JAX engine is for parity of numbers, which CI checks (test_agreement.py and the
batch tests of test_cli.py); this module's machinery runs with ``make test-full``."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

pytest.importorskip("jax")
pytestmark = pytest.mark.slow

from tests.helpers.cli import nslb_process as nslb  # noqa: E402
from tests.helpers.cli import said  # noqa: E402

RUN = ("run", "run.engine=jax", "agent=cd_ts", "env.horizon=30", "run.n_seeds=2")


def announced(stderr: str) -> bool:
    return "nslb: compiling the JAX program of cd_ts on synthetic" in stderr


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A run folder ``a`` beside the cache its run compiled into, and what the run printed
    (copied, never changed, by the tests)."""
    root = tmp_path_factory.mktemp("compiled")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("NSLB_CACHE", str(root / "cache"))
        first = nslb(*RUN, f"hydra.run.dir={root / 'a'}", cwd=root)
    assert first.returncode == 0, first.stderr
    return root, first.stderr


def _copy(compiled: tuple[Path, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``compiled``'s folder and cache in ``tmp_path``, the cache nslb's."""
    shutil.copytree(compiled[0], tmp_path, dirs_exist_ok=True)
    monkeypatch.setenv("NSLB_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache/jax"


def test_a_program_is_announced_once_then_read_from_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, compiled: tuple[Path, str]
) -> None:
    assert announced(compiled[1])
    assert any(_copy(compiled, tmp_path, monkeypatch).rglob("*-cache"))
    second = nslb(*RUN, f"hydra.run.dir={tmp_path / 'b'}", cwd=tmp_path)
    assert second.returncode == 0 and not announced(second.stderr)
    assert (tmp_path / "a/seed=1.csv").read_bytes() == (tmp_path / "b/seed=1.csv").read_bytes()


@pytest.mark.parametrize("recorded", [True, False])
def test_a_damaged_cache_is_healed_in_one_line_with_the_same_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, compiled: tuple[Path, str], recorded: bool
) -> None:
    """A damaged entry is removed before JAX reads it (JAX would warn and compile again every
    run), named in one line, and written anew: the next run is silent. So is one that was
    never recorded (a cache from before the record, or a write cut short), once it is old."""
    entries = list(_copy(compiled, tmp_path, monkeypatch).rglob("*-cache"))
    assert entries
    for entry in entries:
        entry.write_bytes(b"\x00garbage" * 3)
        if not recorded:
            (entry.parent / "entries.json").unlink(missing_ok=True)
            os.utime(entry, (time.time() - 2 * 3600, time.time() - 2 * 3600))
    again = nslb(*RUN, f"hydra.run.dir={tmp_path / 'b'}", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert said(again.stderr) == [
        f"nslb: removed {len(entries)} damaged entries of the JAX compilation cache in "
        f"{entries[0].parent}; their programs compile again, once"
    ]
    assert (tmp_path / "a/seed=0.csv").read_bytes() == (tmp_path / "b/seed=0.csv").read_bytes()
    then = nslb(*RUN, f"hydra.run.dir={tmp_path / 'c'}", cwd=tmp_path)
    assert then.returncode == 0 and said(then.stderr) == [], then.stderr


def test_an_unwritable_cache_is_said_and_the_run_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache folder would be")
    monkeypatch.setenv("NSLB_CACHE", str(blocked))
    done = nslb(*RUN, f"hydra.run.dir={tmp_path / 'a'}", cwd=tmp_path)
    assert "for this process (the cache cannot be written)" in done.stderr
    assert done.returncode == 0 and (tmp_path / "a/seed=1.csv").is_file()
