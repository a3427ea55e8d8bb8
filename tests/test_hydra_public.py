"""nslb uses Hydra through its public API only: no module of ``hydra._internal`` is
imported, and no Hydra class, function or module has an attribute replaced (a private
module or a patched method may change in any Hydra release, silently).

One class is the exception: nslb's sweeper subclasses Hydra's basic sweeper, which Hydra
keeps in ``hydra._internal.core_plugins`` and exposes through no public module. Taking the
class whole (its expansion, batches and ``multirun.yaml``) is safer than copying what it
does; a change of it in a Hydra release fails the sweeper's tests, not silently."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted(
    path
    for folder in ("nslb_cli", "hydra_plugins", "benchmarks")
    for path in (ROOT / folder).rglob("*.py")
)


BASIC_SWEEPER = "hydra._internal.core_plugins.basic_sweeper.BasicSweeper"
"""The one private name nslb imports, in ``hydra_plugins/nslb_sweep/sweeper.py`` alone."""
ALLOWED = {"hydra_plugins/nslb_sweep/sweeper.py": [BASIC_SWEEPER]}


def _private_imports(tree: ast.AST) -> list[str]:
    """The imports in ``tree`` that reach ``hydra._internal`` (``from hydra import
    _internal`` included)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        found += [name for name in names if name.startswith("hydra._internal")]
    return found


def _hydra_names(tree: ast.AST) -> set[str]:
    """The names bound in ``tree`` to Hydra's modules, classes and functions."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {
                (alias.asname or alias.name).split(".")[0]
                for alias in node.names
                if alias.name.split(".")[0] == "hydra"
            }
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "hydra":
            names |= {alias.asname or alias.name for alias in node.names}
    return names


def _root(node: ast.expr) -> str | None:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _patches(tree: ast.AST) -> list[int]:
    """The lines that assign to an attribute of something of Hydra's
    (``Sweeper.validate_batch_is_legal = …``, ``setattr(Hydra, …)``)."""
    hydras = _hydra_names(tree)
    lines = []
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args:
            changer = node.func.id in ("setattr", "delattr")
            lines += [node.lineno] if changer and _root(node.args[0]) in hydras else []
        lines += [t.lineno for t in targets if isinstance(t, ast.Attribute) and _root(t) in hydras]
    return lines


def test_hydra_is_used_through_its_public_api_only() -> None:
    found = {}
    for path in SOURCES:
        tree = ast.parse(path.read_text(), str(path))
        problems = _private_imports(tree) + [f"line {n} patches" for n in _patches(tree)]
        if problems:
            found[str(path.relative_to(ROOT))] = problems
    assert found == ALLOWED


def test_the_scan_finds_a_private_import_and_a_patch() -> None:
    code = (
        "from hydra._internal.hydra import Hydra\n"
        "import hydra._internal.utils\n"
        "from hydra.plugins.sweeper import Sweeper as S\n"
        "import hydra\n"
        "Hydra.get_mode = None\n"
        "S.validate_batch_is_legal = lambda self, batch: None\n"
        "setattr(hydra.core, 'x', 1)\n"
        "mine = object(); mine.x = 1\n"
    )
    tree = ast.parse(code)
    assert _private_imports(tree) == ["hydra._internal.hydra.Hydra", "hydra._internal.utils"]
    assert sorted(_patches(tree)) == [5, 6, 7]
