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
