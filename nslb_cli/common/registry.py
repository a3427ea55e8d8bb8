"""Registries from a config name (``agent=umts``) to its class (docs/design.md §8).

"Cannot be imported" means *any* exception but a request to stop; a plugin is first
imported apart (``nslb_cli.common.apart``), so that one that blocks or exits is refused too.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Callable, Iterator, Mapping
from functools import cached_property
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from omegaconf import OmegaConf

from nslb_cli.common.apart import Ended, run_apart
from nslb_cli.common.errors import ConfigError, describe_error
from nslb_cli.common.stopping import stopped_by

IMPORT_SECONDS = 60.0
"""How long a plugin's import may take before it is refused as blocked."""


class PluginError(RuntimeError):
    """An entry point cannot be used; ``str(err)`` is one line naming the plugin and why."""


class InvalidEntry(TypeError):
    """Raised by a registry's check: the loaded object breaks the interface (one-line reason)."""


def read_attributes(cls: type) -> None:
    """Read every public attribute of ``cls``, so that one whose access raises fails here, where
    the entry can be left out, rather than in the middle of a run."""
    for name in dir(cls):
        if not name.startswith("_"):
            getattr(cls, name)


def _label(point: EntryPoint) -> str:
    """``nslb-cli 0.1.0``: the package that declares an entry point."""
    return f"{point.dist.name} {point.dist.version}" if point.dist is not None else point.value


def params_defaults(schema: type) -> dict[str, Any]:
    """A ``Params`` dataclass's defaults as a config holds them: plain values (lists, not
    tuples; mappings, not dataclasses), in field order. OmegaConf's errors pass through."""
    values = OmegaConf.to_container(OmegaConf.structured(schema), resolve=True)
    assert isinstance(values, dict)
    return {str(key): value for key, value in values.items()}


def require_params(name: str, cls: type) -> None:
    """Check that ``cls.Params`` is a dataclass whose fields all have defaults, ``name``'s being
    the entry point's, and that ``Params()`` builds; raise ``InvalidEntry`` if not.

    A ``ConfigError`` from ``Params()`` means a setting must be given: the entry stays usable.
    """
    params = getattr(cls, "Params", None)
    if not (isinstance(params, type) and dataclasses.is_dataclass(params)):
        raise InvalidEntry(f"{cls.__name__}.Params must be a dataclass, got {params!r}")
    fields = {f.name: f for f in dataclasses.fields(params)}
    no_default = [
        f
        for f in fields.values()
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    ]
    if no_default:
        raise InvalidEntry(f"{params.__name__}.{no_default[0].name} has no default")
    if "name" not in fields or fields["name"].default != name:
        got = fields["name"].default if "name" in fields else None
        raise InvalidEntry(
            f"{params.__name__} needs a field `name: str = '{name}'` (the entry point's name), "
            f"got {got!r}"
        )
    try:
        params()
    except ConfigError:
        pass
    except BaseException as err:
        if stopped_by(err) is not None:
            raise
        raise InvalidEntry(
            f"{params.__name__}() (its defaults) raises {describe_error(err)}"
        ) from None


class Registry(Mapping[str, Any]):
    """A read-only mapping from config names to the classes of one entry-point group.

    Iterating imports nothing; names declared by several packages are not usable (``problem``).
    """

    def __init__(self, kind: str, group: str, check: Callable[[str, Any], None]) -> None:
        """``kind`` is ``agent`` or ``env``; ``check(name, obj)`` raises ``InvalidEntry``
        when ``obj`` is not a valid entry of this registry."""
        self.kind = kind
        self.group = group
        self._check = check
        self._loaded: dict[str, Any] = {}
        self._failed: dict[str, str] = {}

    @cached_property
    def _declared(self) -> dict[str, list[EntryPoint]]:
        found: dict[str, list[EntryPoint]] = {}
        for point in entry_points(group=self.group):
            found.setdefault(point.name, []).append(point)
        # only a name declared twice is sorted by package: a label reads package metadata
        by_package = {
            name: sorted(points, key=_label) if len(points) > 1 else points
            for name, points in found.items()
        }
        return dict(sorted(by_package.items()))

    @cached_property
    def _usable(self) -> dict[str, EntryPoint]:
        return {name: points[0] for name, points in self._declared.items() if len(points) == 1}

    def __getitem__(self, name: str) -> Any:
        if name in self._loaded:
            return self._loaded[name]
        problem = self.problem(name)
        if problem is not None:
            raise PluginError(problem)
        point = self._usable[name]  # KeyError for a name nobody declared
        try:
            if self.foreign(name):  # a blocking or exiting import ends a child, not nslb
                run_apart(lambda: self._try(name, point), "its import", IMPORT_SECONDS)
            loaded = self._load(name, point)
        except BaseException as err:  # a plugin may raise anything, SystemExit included
            if stopped_by(err) is not None:
                raise  # Ctrl-C or SIGTERM stops nslb, whatever the plugin was doing
            reason = str(err) if isinstance(err, InvalidEntry | Ended) else describe_error(err)
            self._failed[name] = f"{self.describe(name)}: cannot use {point.value}: {reason}"
            raise PluginError(self._failed[name]) from None
        self._loaded[name] = loaded
        return loaded

    def _load(self, name: str, point: EntryPoint) -> Any:
        """Import entry ``name`` and check it."""
        loaded = point.load()
        self._check(name, loaded)
        if isinstance(loaded, type):
            read_attributes(loaded)
        return loaded

    def _try(self, name: str, point: EntryPoint) -> None:
        """In a child: ``_load``, silenced; what it raises, the parent's own import
        raises again, and reports."""
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 1)
            os.dup2(null.fileno(), 2)
        with contextlib.suppress(BaseException):
            self._load(name, point)

    def foreign(self, name: str) -> bool:
        """Whether entry ``name`` is a plugin's (its code is outside ``nslb_cli``)."""
        return not self._usable[name].value.startswith("nslb_cli.")

    def __iter__(self) -> Iterator[str]:
        return iter(self._usable)

    def __len__(self) -> int:
        return len(self._usable)

    def __contains__(self, name: object) -> bool:
        return name in self._usable

    def declared(self) -> list[str]:
        """Every name some package declares, usable or not (sorted)."""
        return list(self._declared)

    def package(self, name: str) -> str | None:
        """The distribution that declares ``name`` (``nslb-cli``, a plugin's), if known."""
        dist = self._usable[name].dist
        return dist.name if dist is not None else None

    def describe(self, name: str) -> str:
        """How messages name an entry: ``agent 'mts' (nslb-cli 0.1.0)``."""
        packages = ", ".join(_label(p) for p in self._declared.get(name, []))
        return f"{self.kind} '{name}' ({packages})"

    def problem(self, name: str) -> str | None:
        """Why ``name`` cannot be used (declared twice, or failed to load), else ``None``."""
        if len(self._declared.get(name, [])) > 1:
            return f"{self.describe(name)} is declared by more than one package: neither is used"
        return self._failed.get(name)

    def problems(self) -> list[str]:
        """Every problem known so far: names declared twice, and entries that failed to load."""
        twice = [self.problem(name) for name, found in self._declared.items() if len(found) > 1]
        return [p for p in twice if p is not None] + list(self._failed.values())

    def load_all(self) -> dict[str, Any]:
        """Every usable entry, imported; those that fail are left out (see ``problems``)."""
        loaded = {}
        for name in self:
            with contextlib.suppress(PluginError):
                loaded[name] = self[name]
        return loaded
