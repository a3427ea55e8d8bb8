"""README.md stays true to the code: its module map names every module of nslb_cli."""

from __future__ import annotations

import re

from tests.helpers.paths import REPO


def test_the_module_map_lists_every_module() -> None:
    readme = (REPO / "README.md").read_text()
    section = readme[readme.index("## Development") :]
    named = set(re.findall(r"^\| `([\w/]+\.py)`", section, re.M))
    named |= set(re.findall(r"^\| `[\w/]+\.py`, `([\w/]+\.py)`", section, re.M))
    for folder, what in re.findall(r"^\| `([\w/]+)/` \| ([^|]+)\|", section, re.M):
        named |= {f"{folder}/{name}" for name in re.findall(r"`(\w+\.py)`", what)}
    package = REPO / "nslb_cli"
    modules = {
        path.relative_to(package).as_posix()
        for path in package.rglob("*.py")
        if path.name != "__init__.py"
    }
    missing = sorted(modules - named)
    assert not missing, f"README.md's module map does not name {missing}"
    stale = sorted(name for name in named if not (package / name).is_file())
    assert not stale, f"README.md's module map names modules that do not exist: {stale}"
