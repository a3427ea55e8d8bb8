"""The rule every section shares: an integer beyond 64 bits and a float that is not finite
are refused in one line naming the key, whatever the section and the parameter."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import pytest

from nslb_cli.agents import AGENTS
from nslb_cli.common.errors import ConfigError
from nslb_cli.envs import ENVIRONMENTS

HUGE = 10**400


def _broken(value: Any) -> Any:
    """``value`` made to break the rule (an integer of 400 digits, an infinite float, a list
    whose first entry breaks it), or ``None`` for a value the rule does not read."""
    if isinstance(value, bool) or not isinstance(value, int | float | list):
        return None
    if isinstance(value, int):
        return HUGE
    if isinstance(value, float):
        return math.inf
    first = _broken(value[0]) if value else None
    return None if first is None else [first, *value[1:]]


def _defaults(cls: type) -> Any:
    """A section's defaults, unchecked where an input has no default (``env=logged``'s file):
    the shared rule is checked before a section's own checks."""
    try:
        return cls()
    except ConfigError:
        defaults = object.__new__(cls)
        for field in dataclasses.fields(cls):
            object.__setattr__(defaults, field.name, field.default)
        return defaults


def test_every_section_refuses_an_integer_beyond_64_bits_and_a_float_not_finite() -> None:
    tried = 0
    for registry in (ENVIRONMENTS, AGENTS):
        for name in registry:
            defaults = _defaults(registry[name].Params)
            for field in dataclasses.fields(defaults):
                value = _broken(getattr(defaults, field.name))
                if value is None:
                    continue
                with pytest.raises(ConfigError) as refused:
                    dataclasses.replace(defaults, **{field.name: value})
                said = str(refused.value)
                assert refused.value.key == field.name and "\n" not in said, (name, said)
                integer = HUGE in (value if isinstance(value, list) else [value])
                rule = "must be a 64-bit integer" if integer else "must be a finite number"
                assert refused.value.message.startswith(rule), (name, said)
                tried += 1
    assert tried > 50  # every section's numbers, not a few
