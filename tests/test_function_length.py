"""No function or method of nslb_cli is longer than ``MOST_LINES`` lines: a longer one
is split into steps that each have a name and a docstring."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "nslb_cli"
MOST_LINES = 80


def function_lengths(source: str) -> list[tuple[str, int, int]]:
    """``(qualified name, first line, lines)`` of every function and method in ``source``,
    from its ``def`` line (decorators left out) to its last line, docstring included."""
    found: list[tuple[str, int, int]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            name = prefix
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = f"{prefix}{child.name}."
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                end = child.end_lineno or child.lineno
                found.append((name[:-1], child.lineno, end - child.lineno + 1))
            visit(child, name)

    visit(ast.parse(source), "")
    return found


def test_the_lengths_are_counted_from_the_def_line_to_the_last() -> None:
    source = (
        "import functools\n"
        "@functools.cache\n"  # decorators are not counted
        "def f():\n"
        "    def inner():\n"
        "        return 1\n"
        "    return inner\n"
        "class C:\n"
        "    async def m(self):\n"
        "        pass\n"
    )
    assert function_lengths(source) == [("f", 3, 4), ("f.inner", 4, 2), ("C.m", 8, 2)]


def test_no_function_is_longer_than_the_most_lines() -> None:
    offenders = [
        f"{path.relative_to(PACKAGE.parent)}:{line} {name}: {lines} lines"
        for path in sorted(PACKAGE.rglob("*.py"))
        for name, line, lines in function_lengths(path.read_text())
        if lines > MOST_LINES
    ]
    assert not offenders, (
        f"{len(offenders)} function(s) longer than {MOST_LINES} lines (split each into named "
        "steps):\n" + "\n".join(offenders)
    )
