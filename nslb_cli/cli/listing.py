"""``nslb list``: every environment and agent with its parameters, and the experiment presets."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import MISSING, fields
from functools import partial
from importlib import resources
from typing import TYPE_CHECKING, Any

from nslb_cli.agents import AGENTS
from nslb_cli.cli.errors import fail, warn
from nslb_cli.common.registry import Registry
from nslb_cli.envs import ENVIRONMENTS
from nslb_cli.runner.compose import CONFIG_MODULE

if TYPE_CHECKING:
    from importlib.abc import Traversable  # importlib.resources.abc from Python 3.11

OWN_PACKAGE = "nslb-cli"
WIDTH = 100


def _value(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def _parameters(params: type) -> str:
    shown = []
    for f in fields(params):
        if f.name != "name":
            default = f.default if f.default_factory is MISSING else f.default_factory()
            shown.append(f"{f.name}={_value(default)}")
    return " ".join(shown) or "(no parameters)"


def summary(cls: type) -> str:
    """What an agent or environment is, with its paper: the first paragraph of its class
    docstring, on one line (without reStructuredText's double backquotes)."""
    paragraph = (cls.__doc__ or "").strip().split("\n\n")[0]
    return " ".join(paragraph.replace("``", "").split())


def _group(registry: Registry) -> list[str]:
    loaded = registry.load_all()
    column = max((len(name) for name in loaded), default=0) + 2
    lines = []
    indent = " " * (column + 2)
    fill = partial(textwrap.fill, width=WIDTH, subsequent_indent=indent)
    for name, cls in loaded.items():
        what = summary(cls)
        text = _parameters(cls.Params)
        package = registry.package(name)
        if package != OWN_PACKAGE:
            text += f"  [plugin: {package}]"
        first = f"  {name:<{column}}"
        if what:
            lines.append(fill(what, initial_indent=first))
            first = indent
        lines.append(fill(text, initial_indent=first, break_on_hyphens=False))
    return lines


def presets() -> list[str]:
    """The presets of ``conf/experiment/``, as ``experiment=`` takes them, in order."""
    return sorted(_presets(resources.files(CONFIG_MODULE) / "experiment"))


def _presets(folder: Traversable, prefix: str = "") -> list[str]:
    if not folder.is_dir():
        return []
    found = []
    for entry in folder.iterdir():
        if entry.is_dir():
            found += _presets(entry, f"{prefix}{entry.name}/")
        elif entry.name.endswith(".yaml"):
            found.append(prefix + entry.name[: -len(".yaml")])
    return found


def main(arguments: Sequence[str]) -> None:
    """Print the environments and agents with their parameters, then the presets."""
    if arguments:
        fail("nslb list takes no arguments")
    for group, registry in (("env", ENVIRONMENTS), ("agent", AGENTS)):
        print(f"{group}:  {group}=NAME {group}.KEY=VALUE")
        print("\n".join(_group(registry)))
        for problem in registry.problems():
            warn(problem)
    found = presets()
    text = ", ".join(found) if found else "(none)"
    print(textwrap.fill(text, WIDTH, initial_indent="experiment:  ", subsequent_indent="  "))
