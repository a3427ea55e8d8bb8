"""Compiled code is cached per version of the kernels' sources (nslb_cli.compiled)."""

from __future__ import annotations

import ast
import inspect
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numba
import numpy as np
import pytest

from nslb_cli import compiled
from nslb_cli.agents.jit import draw_each


def package_modules() -> dict[str, str]:
    return {
        path.relative_to(compiled.PACKAGE).as_posix(): path.read_text()
        for path in compiled.PACKAGE.rglob("*.py")
    }


def module_file(name: str) -> str | None:
    """``nslb_cli.a.b`` -> ``a/b.py`` (or ``a/b/__init__.py``), None if not a module."""
    parts = name.split(".")[1:]
    for candidate in ("/".join(parts) + ".py", "/".join([*parts, "__init__.py"])):
        if (compiled.PACKAGE / candidate).is_file():
            return candidate
    return None


def nslb_imports(source: str) -> set[str]:
    """The package's modules that ``source`` imports at module level."""
    found = set()
    for node in ast.parse(source).body:
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("nslb_cli"):
            for alias in node.names:
                found.add(module_file(f"{node.module}.{alias.name}") or module_file(node.module))
        elif isinstance(node, ast.Import):
            found |= {module_file(a.name) for a in node.names if a.name.startswith("nslb_cli")}
    return found - {None}


def test_the_hashed_modules_are_those_that_compile_and_everything_they_import() -> None:
    modules = package_modules()
    compiling = {name for name, text in modules.items() if "nslb_cli.compiled import" in text}
    closure, todo = set(), [*compiling, "compiled.py"]
    while todo:
        name = todo.pop()
        if name not in closure:
            closure.add(name)
            todo.extend(nslb_imports(modules[name]))
    assert {"reward_kernels.py", "rewards.py", "agents/particle_filter.py"} <= closure
    assert closure == set(compiled.KERNEL_MODULES)
    direct = {name for name, text in modules.items() if "njit" in text and name != "compiled.py"}
    assert not direct, f"call numba through nslb_cli.compiled, not directly: {direct}"


def test_nslb_kernels_are_cached_in_the_versioned_folder_and_no_other_code_is() -> None:
    locator = compiled.VersionedLocator.from_function(
        draw_each.py_func, inspect.getfile(draw_each.py_func)
    )
    assert Path(locator.get_cache_path()).parent == compiled.CACHE
    assert compiled.CACHE.name == compiled.sources_hash()
    assert compiled.VersionedLocator.from_function(np.sum, np.__file__) is None
    assert os.environ.get("NUMBA_CACHE_DIR", "") == numba.config.CACHE_DIR, "left alone"


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


def test_the_cache_root_follows_numba_cache_dir_then_nslb_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "numba"))
    assert compiled.cache_root() == tmp_path / "numba" / "nslb"
    monkeypatch.delenv("NUMBA_CACHE_DIR")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NSLB_CACHE", "relative")
    assert compiled.cache_root() == tmp_path / "relative" / "numba", "made absolute"


def test_an_unwritable_cache_compiles_in_a_temporary_folder_with_one_warning(
    tmp_path: Path,
) -> None:
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the cache folder would go")
    program = (
        "import numpy as np\n"
        "from nslb_cli.agents.jit import draw_each\n"
        "from nslb_cli import compiled\n"
        "out = np.empty(2, np.int64)\n"
        "draw_each(np.ones((2, 3)), np.random.default_rng(0), out)\n"
        "print(compiled._scratch[0])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program],
        env={**os.environ, "NSLB_CACHE": str(blocked)},
        capture_output=True,
        text=True,
        check=True,
    )
    warnings = [line for line in done.stderr.splitlines() if line.startswith("nslb: warning")]
    assert len(warnings) == 1 and "NSLB_CACHE" in warnings[0], done.stderr
    assert not Path(done.stdout.strip()).exists(), "the temporary cache is removed at exit"


def test_pruning_keeps_the_versions_used_last(tmp_path: Path) -> None:
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
