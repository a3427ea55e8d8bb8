"""The errors every package of nslb speaks: a bad configuration value (``ConfigError``,
printed as ``KEY: what to fix``), and any exception said in one line (``describe_error``).
"""

from __future__ import annotations


class ConfigError(ValueError):
    """A configuration value is invalid; ``str(err)`` is a one-line message for the user."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"{key}: {message}")
        self.key = key
        self.message = message

    def within(self, prefix: str) -> ConfigError:
        """The same error with its key qualified by ``prefix`` (e.g. ``agent``)."""
        return ConfigError(f"{prefix}.{self.key}", self.message)


def describe_error(err: BaseException) -> str:
    """``Type: message`` of an exception, on one line (the type alone if its message is
    empty or cannot be formed: a plugin's exception may break ``str`` too)."""
    try:
        lines = str(err).strip().splitlines()
    except Exception:
        lines = []
    return f"{type(err).__name__}: {lines[0]}" if lines else type(err).__name__
