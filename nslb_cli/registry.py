"""Registries from a config name (``agent=umts``, ``env=synthetic``) to the class behind it.

Each entry names its class as ``module:attribute`` and is imported on first use, so a run
on the synthetic environment never imports MovieLens' dependencies, and ``nslb plot`` and
``nslb list`` import no agent at all.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from typing import Any


class Registry(Mapping[str, Any]):
    """A read-only mapping from config names to classes, imported lazily."""

    def __init__(self, kind: str, entries: Mapping[str, str]) -> None:
        self.kind = kind
        self._entries = dict(entries)
        self._loaded: dict[str, Any] = {}

    def __getitem__(self, name: str) -> Any:
        if name not in self._loaded:
            module, _, attribute = self._entries[name].partition(":")
            self._loaded[name] = getattr(importlib.import_module(module), attribute)
        return self._loaded[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def location(self, name: str) -> str:
        """Where ``name`` is implemented, as ``module:attribute``."""
        return self._entries[name]
