"""Plugins' JAX agents (entry-point group ``nslb.jax_agents``): found and checked as the
numpy agents are (:class:`~nslb_cli.common.registry.Registry`), so that a broken entry (a
missing module, no class, a class without the contract, a name two packages declare) is
one line naming the package. Imports no JAX itself: a plugin's module does, when loaded."""

from __future__ import annotations

from nslb_cli.common.registry import InvalidEntry, Registry, require_params
from nslb_cli.jax_engine.coverage import GROUP

FUNCTIONS = ("init", "act", "update", "summary")
"""What every JAX agent class defines (``nslb_cli.api``, "JAX agents")."""


def check_jax_agent_class(name: str, cls: object) -> None:
    """Raise :class:`InvalidEntry` unless ``cls`` is a class with the JAX agent contract's
    functions and a valid ``Params`` dataclass for the name ``name``."""
    if not isinstance(cls, type):
        raise InvalidEntry(f"{cls!r} is not a class")
    missing = [f for f in FUNCTIONS if not callable(getattr(cls, f, None))]
    if missing:
        raise InvalidEntry(
            f"{cls.__name__} has no {', '.join(missing)} (the JAX agent contract: nslb_cli.api)"
        )
    require_params(name, cls)


JAX_AGENTS = Registry("JAX agent", GROUP, check_jax_agent_class)


def problem(name: str) -> str | None:
    """Why the JAX class a package declares for agent ``name`` cannot be used (one line,
    naming the package), loading it; ``None`` when it can."""
    try:
        JAX_AGENTS[name]
    except Exception as err:  # PluginError: the registry's one line
        return str(err)
    return None
