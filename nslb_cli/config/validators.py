"""Helpers for hyperparameter dataclasses: range checks with messages that name the field.

Every environment and agent declares its parameters as a dataclass whose ``__post_init__``
calls these checks, so a bad value is rejected on construction with one line that says
which parameter is wrong and what it accepts.
"""

from __future__ import annotations

import math
from collections.abc import Iterable


class ConfigError(ValueError):
    """A configuration value is invalid; ``str(err)`` is a one-line message for the user."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"{key}: {message}")
        self.key = key
        self.message = message

    def within(self, prefix: str) -> ConfigError:
        """The same error with its key qualified by ``prefix`` (e.g. ``agent``)."""
        return ConfigError(f"{prefix}.{self.key}", self.message)


def require(condition: bool, key: str, message: str) -> None:
    """Raise :class:`ConfigError` for ``key`` unless ``condition`` holds."""
    if not condition:
        raise ConfigError(key, message)


def finite(value: float, key: str) -> None:
    require(math.isfinite(value), key, f"must be a finite number, got {value}")


def positive(value: float, key: str) -> None:
    finite(value, key)
    require(value > 0, key, f"must be > 0, got {value}")


def at_least(value: float, lower: float, key: str, reason: str) -> None:
    finite(value, key)
    require(value >= lower, key, f"must be >= {lower} ({reason}), got {value}")


def non_negative(value: float, key: str) -> None:
    finite(value, key)
    require(value >= 0, key, f"must be >= 0, got {value}")


def probability(value: float, key: str) -> None:
    finite(value, key)
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
