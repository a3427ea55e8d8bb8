"""Compiled code is cached per version of the kernels' sources (nslb_cli.compiled.jit)."""

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

from nslb_cli.agents.umts.sampling import draw_each
from nslb_cli.compiled import jit as compiled


def module_file(package: Path, name: str) -> str | None:
    """``nslb_cli.a.b`` -> ``a/b.py`` (or ``a/b/__init__.py``), None if not a module."""
    parts = name.split(".")[1:]
    for candidate in ("/".join(parts) + ".py", "/".join([*parts, "__init__.py"])):
        if (package / candidate).is_file():
            return candidate
    return None


def module_level_imports(package: Path, source: str) -> set[str]:
    """The package's modules that ``source`` imports at module level."""
    found = set()
    for node in ast.parse(source).body:
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("nslb_cli"):
            for alias in node.names:
                name = f"{node.module}.{alias.name}"
                found.add(module_file(package, name) or module_file(package, node.module))
        elif isinstance(node, ast.Import):
            found |= {module_file(package, a.name) for a in node.names if "nslb_cli" in a.name}
    return found - {None}


def test_the_hashed_modules_hold_every_compiled_function_and_what_they_import() -> None:
    package = compiled.PACKAGE
    listed = set(compiled.KERNEL_MODULES)
    decorated = {
        path.relative_to(package).as_posix()
        for path in package.rglob("*.py")
        if any(
            isinstance(d, ast.Name) and d.id in ("jit", "inline")
            for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.FunctionDef)
            for d in node.decorator_list
        )
    }
    assert {"bandit/reward_kernels.py", "agents/umts/latent.py", "agents/linalg.py"} <= decorated
    assert decorated <= listed
    for name in listed:
        imported = module_level_imports(package, (package / name).read_text())
        assert imported <= listed, f"{name} imports {imported - listed}, not hashed"
    direct = {
        path.relative_to(package).as_posix()
        for path in package.rglob("*.py")
        if "njit" in path.read_text()
    } - {"compiled/jit.py"}
    assert not direct, f"call numba through nslb_cli.compiled.jit, not directly: {direct}"


def test_a_new_kernel_module_and_what_it_imports_join_the_hash(tmp_path: Path) -> None:
    package = tmp_path / "nslb_cli"
    shutil.copytree(compiled.PACKAGE, package, ignore=shutil.ignore_patterns("__pycache__"))
    (package / "agents" / "helper.py").write_text("X = 1\n")
    (package / "agents" / "new_kernel.py").write_text(
        "from nslb_cli.compiled.jit import jit\nfrom nslb_cli.agents.helper import X\n"
    )
    found = subprocess.run(
        [
            sys.executable,
            "-c",
            "from nslb_cli.compiled import jit as compiled; print(*compiled.KERNEL_MODULES)",
        ],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(tmp_path), "NSLB_CACHE": str(tmp_path / "cache")},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert {"agents/new_kernel.py", "agents/helper.py"} <= set(found)
    assert set(found) - {"agents/new_kernel.py", "agents/helper.py"} == set(compiled.KERNEL_MODULES)


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
        "from nslb_cli.agents.umts.sampling import draw_each\n"
        "from nslb_cli.compiled import jit as compiled\n"
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


def test_compiling_is_announced_once_per_family_and_a_cached_kernel_is_silent(
    tmp_path: Path,
) -> None:
    program = (
        "import numpy as np\nfrom nslb_cli.agents.linalg import add_scaled, dot\n"
        "x = np.arange(4.0)\nadd_scaled(x, np.ones(4), 2.0)\nprint(dot(x, np.ones(4)))\n"
    )
    env = {**os.environ, "NSLB_CACHE": str(tmp_path / "cache")}
    env.pop("NUMBA_CACHE_DIR", None)
    runs = [
        subprocess.run(
            [sys.executable, "-c", program], env=env, capture_output=True, text=True, check=True
        )
        for _ in range(2)
    ]
    # two kernels of one family compiled: one line; the second process loads both
    assert runs[0].stderr.splitlines() == [
        "nslb: compiling agents.linalg kernels once for this version of nslb (then cached; "
        "`nslb warmup` compiles every kernel in advance)"
    ]
    assert runs[1].stderr == "" and runs[0].stdout == runs[1].stdout == "14.0\n"


LINALG = """
import numpy as np
from nslb_cli.agents.linalg import add_scaled, dot

x = np.arange(4.0)
add_scaled(x, np.ones(4), 2.0)
print(dot(x, np.ones(4)))
"""
READ_ONLY = """
from nslb_cli.compiled import jit as compiled

def refused(self):
    raise PermissionError(1, "Operation not permitted")  # as a read-only or immutable folder

compiled.VersionedLocator.ensure_cache_path = refused
"""


def test_a_read_only_cache_is_still_read(tmp_path: Path) -> None:
    """A cache that cannot be written (a shared install, a read-only mount) is not replaced
    by a temporary one: its kernels load; one warning says that new ones will not be kept."""
    env = {**os.environ, "NSLB_CACHE": str(tmp_path / "cache")}
    env.pop("NUMBA_CACHE_DIR", None)
    runs = [
        subprocess.run(
            [sys.executable, "-c", program], env=env, capture_output=True, text=True, check=True
        )
        for program in (LINALG, READ_ONLY + LINALG)
    ]
    assert "compiling agents.linalg" in runs[0].stderr, "the first run fills the cache"
    lines = runs[1].stderr.splitlines()
    assert len(lines) == 1 and "the kernels in it are used" in lines[0], runs[1].stderr
    assert runs[1].stdout == "14.0\n"


LOAD_THEN_COMPILE = """
import sys
import numba
import numpy as np
from nslb_cli.agents.linalg import add_scaled, dot

x = np.arange(4.0)
add_scaled(x, np.ones(4), 2.0)
print(dot(x, np.ones(4)))
print("numba.np.npdatetime" in sys.modules)  # a lowering registry: imported by a refresh

@numba.njit
def sorted_total(values):
    return np.cumsum(np.sort(values))[-1]

print(sorted_total(np.array([3.0, 1.0, 2.0])))
"""


def test_a_cached_kernel_loads_without_numba_s_lowering_and_compiling_after_it_works(
    tmp_path: Path,
) -> None:
    """The first process compiles (and refreshes numba's context to do so); the second loads
    the cached kernels without importing the lowering registries, then compiles a new
    function, for which numba refreshes the context itself."""
    env = {**os.environ, "NSLB_CACHE": str(tmp_path / "cache")}
    env.pop("NUMBA_CACHE_DIR", None)
    runs = [
        subprocess.run(
            [sys.executable, "-c", LOAD_THEN_COMPILE], env=env, capture_output=True, text=True
        )
        for _ in range(2)
    ]
    assert [run.returncode for run in runs] == [0, 0], runs[1].stderr
    assert runs[0].stdout.split() == ["14.0", "True", "6.0"], "compiling refreshed"
    assert runs[1].stdout.split() == ["14.0", "False", "6.0"], "loading did not"
