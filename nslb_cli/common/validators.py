"""Helpers for hyperparameter dataclasses: range checks with messages that name the field.

Every environment and agent declares its parameters as a dataclass whose ``__post_init__``
calls these checks, so a bad value is rejected on construction with one line that says
which parameter is wrong and what it accepts.

Upper bounds (:func:`at_most`, :func:`magnitude_at_most`) keep the arithmetic finite: a
value that is finite but so large that squaring it, summing it over states or rounds, or
dividing by it overflows float64 (or float32, in ALS) would otherwise run and silently
produce ``inf`` or ``NaN``. Each bound is chosen far beyond any value a researcher would
use, and the module that sets it says why (e.g. ``MAX_SIGMA`` in
:mod:`nslb_cli.envs.synthetic`).
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
    # An int is finite however large (math.isfinite would overflow converting 10**400).
    ok = isinstance(value, int) or math.isfinite(value)
    require(ok, key, f"must be a finite number, got {value}")


def positive(value: float, key: str) -> None:
    finite(value, key)
    require(value > 0, key, f"must be > 0, got {value}")


def at_least(value: float, lower: float, key: str, reason: str) -> None:
    finite(value, key)
    require(value >= lower, key, f"must be >= {lower} ({reason}), got {value}")


def at_most(value: float, upper: float, key: str, reason: str) -> None:
    """``value`` is a finite number ``<= upper``; ``reason`` says what a larger one breaks."""
    finite(value, key)
    require(value <= upper, key, f"must be <= {upper:g} ({reason}), got {value}")


def magnitude_at_most(value: float, upper: float, key: str, reason: str) -> None:
    """``|value| <= upper`` (finite): for values of either sign, e.g. a reward bound."""
    finite(value, key)
    require(
        abs(value) <= upper,
        key,
        f"must be in [-{upper:g}, {upper:g}] ({reason}), got {value}",
    )


INT64_MAX = 2**63 - 1
"""numpy's integers are 64-bit: a count, size or window beyond it overflows their arithmetic
(``np.empty(10**400)``, ``counts >= 10**400``, a memory estimate as a float)."""


def int64(value: int, key: str) -> None:
    """An integer setting that numpy can hold: ``|value| <= 2^63 - 1``."""
    if -INT64_MAX <= value <= INT64_MAX:
        return
    digits = len(str(abs(value)))
    got = str(value) if digits <= 30 else f"an integer of {digits} digits"
    raise ConfigError(key, f"must be a 64-bit integer (at most 2^63 - 1 in magnitude), got {got}")


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
