"""Compiled code is cached per version of the kernels' sources (nslb_cli.compiled)."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import numba
import pytest

from nslb_cli import compiled

USES_COMPILED = re.compile(r"^from nslb_cli\.compiled import|^import nslb_cli\.compiled", re.M)


def package_modules() -> dict[str, str]:
    return {
        path.relative_to(compiled.PACKAGE).as_posix(): path.read_text()
        for path in compiled.PACKAGE.rglob("*.py")
    }


def test_every_module_that_compiles_is_hashed_and_compiles_through_nslb_compiled() -> None:
    modules = package_modules()
    compiling = {name for name, text in modules.items() if USES_COMPILED.search(text)}
    assert compiling, "the kernels import their decorators from nslb_cli.compiled"
    assert compiling | {"compiled.py"} == set(compiled.KERNEL_MODULES)
    direct = {name for name, text in modules.items() if "njit" in text and name != "compiled.py"}
    assert not direct, f"call numba through nslb_cli.compiled, not directly: {direct}"


def test_numba_caches_nslb_code_in_the_folder_of_this_version_of_the_sources() -> None:
    assert str(compiled.CACHE) == numba.config.CACHE_DIR
    assert compiled.CACHE.name == compiled.sources_hash()


def test_editing_any_kernel_module_changes_the_cache_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in compiled.KERNEL_MODULES:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(compiled.PACKAGE / name, tmp_path / name)
    monkeypatch.setattr(compiled, "PACKAGE", tmp_path)
    original = compiled.sources_hash()
    assert original == compiled.CACHE.name, "a copy of the same sources: the same folder"
    seen = {original}
    for name in compiled.KERNEL_MODULES:
        text = (tmp_path / name).read_text()
        (tmp_path / name).write_text(text + "\n# edited\n")
        seen.add(compiled.sources_hash())
        (tmp_path / name).write_text(text)
    assert len(seen) == len(compiled.KERNEL_MODULES) + 1, "every edit gives a folder of its own"
    assert compiled.sources_hash() == original, "undoing the edit finds the old cache again"
    monkeypatch.setattr(numba, "__version__", "0.0.0")
    assert compiled.sources_hash() != original, "another numba compiles again"


def test_pruning_keeps_the_versions_written_last(tmp_path: Path) -> None:
    for age in range(12):
        folder = tmp_path / f"version{age}"
        (folder / "agents").mkdir(parents=True)
        os.utime(folder, (1e9 - age, 1e9 - age))
    (tmp_path / "a file").write_text("not a version")
    compiled.prune(tmp_path, 7)
    left = sorted(p.name for p in tmp_path.iterdir() if p.is_dir())
    assert left == [f"version{age}" for age in range(7)]
    assert (tmp_path / "a file").exists()
    compiled.prune(tmp_path / "missing", 7)  # no cache yet: nothing to do
