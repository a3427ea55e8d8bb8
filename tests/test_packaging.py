"""The wheel ships every config folder: `nslb` must work from any directory once installed."""

from __future__ import annotations

import tomllib

from tests.helpers.paths import REPO


def test_every_conf_folder_is_a_listed_package() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    packages = set(project["tool"]["setuptools"]["packages"])
    folders = {p.parent for p in (REPO / "conf").rglob("*.yaml")}
    for folder in folders:
        relative = folder.relative_to(REPO / "conf").parts
        assert ".".join(("nslb_cli", "conf", *relative)) in packages, folder


def test_every_code_folder_is_a_listed_package() -> None:
    """nslb's code and its Hydra sweeper (in Hydra's ``hydra_plugins`` namespace package)."""
    code = [*(REPO / "nslb_cli").rglob("*.py"), *(REPO / "hydra_plugins").rglob("*.py")]
    packages = {".".join(p.parent.relative_to(REPO).parts) for p in code}
    assert "hydra_plugins.nslb_sweep" in packages
    listed = set(
        tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    )
    assert packages <= listed


def test_the_lock_pins_every_dependency_within_pyprojects_bounds() -> None:
    """``make install-locked`` installs ``requirements/dev-py311.lock``: every dependency of
    nslb and of its ``dev`` extra is pinned there, at a version ``pyproject.toml`` allows."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name
    from packaging.version import Version

    pinned = {}
    for line in (REPO / "requirements" / "dev-py311.lock").read_text().splitlines():
        if "==" in line and not line.startswith(("#", " ")):
            name, _, version = line.split(" ")[0].partition("==")
            pinned[canonicalize_name(name)] = Version(version)
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    for text in [*project["dependencies"], *project["optional-dependencies"]["dev"]]:
        wanted = Requirement(text)
        version = pinned.get(canonicalize_name(wanted.name))
        assert version is not None, f"{wanted.name} is not in the lock"
        assert wanted.specifier.contains(version, prereleases=True), f"{wanted} but {version}"
