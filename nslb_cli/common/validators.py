"""Checks for the parameter dataclasses: what each value means, and one rule for all.

``section`` applies the shared rule (an integer fits 64 bits, a float is finite), then the
section's own ``Section.validate``. Overflow is caught where it happens
(``nslb_cli.bandit.finite``), not by bounds here.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, ClassVar

from nslb_cli.common.errors import ConfigError


def require(condition: bool, key: str, message: str) -> None:
    """Raise ``ConfigError`` for ``key`` unless ``condition`` holds."""
    if not condition:
        raise ConfigError(key, message)


INT64_MAX = 2**63 - 1  # numpy's integers: a count beyond it overflows their arithmetic


def number(value: Any, key: str) -> None:
    """The rule every section shares, for one value: an integer fits in 64 bits, a float is
    finite, and so is every entry of a list, tuple or mapping."""
    if isinstance(value, bool | str) or value is None:
        return
    if isinstance(value, int) and not -INT64_MAX <= value <= INT64_MAX:
        digits = len(str(abs(value)))
        got = str(value) if digits <= 30 else f"an integer of {digits} digits"
        raise ConfigError(
            key, f"must be a 64-bit integer (at most 2^63 - 1 in magnitude), got {got}"
        )
    elif isinstance(value, float):
        require(math.isfinite(value), key, f"must be a finite number, got {value}")
    elif isinstance(value, list | tuple | dict):
        for entry in value.values() if isinstance(value, dict) else value:
            number(entry, key)


def section(params: Any) -> None:
    """Apply ``number`` to every field of the dataclass ``params``."""
    for field in dataclasses.fields(params):
        number(getattr(params, field.name), field.name)


@dataclass
class Section:
    """The base of a section's parameters (``env``, ``agent``)."""

    scales: ClassVar[tuple[str, ...]] = ()
    """The parameters whose size scales the section's numbers (an environment's rewards):
    what a run whose numbers overflow is told to lower."""
    added_later: ClassVar[tuple[str, ...]] = ()
    """Parameters added after results were on disk: a run records them (its folder's
    ``config.yaml``, the result key, a study's world) only when they differ from their
    defaults, so that results written before they existed keep their identity. Their
    defaults must never change."""

    def __post_init__(self) -> None:
        section(self)
        self.validate()

    def validate(self) -> None:
        """A subclass's own checks of what its parameters mean."""


def positive(value: float, key: str) -> None:
    require(value > 0, key, f"must be > 0, got {value}")


def at_least(value: float, lower: float, key: str, reason: str) -> None:
    require(value >= lower, key, f"must be >= {lower} ({reason}), got {value}")


def non_negative(value: float, key: str) -> None:
    require(value >= 0, key, f"must be >= 0, got {value}")


def probability(value: float, key: str) -> None:
    require(0.0 <= value <= 1.0, key, f"must be in [0, 1], got {value}")


def one_of(value: str, choices: Iterable[str], key: str) -> None:
    options = tuple(choices)
    require(value in options, key, f"must be one of {', '.join(options)}; got '{value}'")


def even_window(value: int, key: str) -> None:
    """A detector window ``tau`` compares two halves of ``tau / 2``: positive and even."""
    require(
        value > 0 and value % 2 == 0,
        key,
        f"must be a positive even integer (two halves), got {value}",
    )
