"""The JAX engine's agents, nslb's own and plugins' alike: entry points of the group
``nslb.jax_agents`` (nslb's in its ``pyproject.toml``), found and checked as the numpy
agents are (``Registry``), so that a broken entry (a missing
module, no class, a class without the contract, a name two packages declare) is one line
naming the package. Listing them imports nothing; loading one of nslb's imports JAX, and a
plugin's module does what it does when loaded, in a process of its own first."""

from __future__ import annotations

from nslb_cli.common.registry import InvalidEntry, Registry, require_params

GROUP = "nslb.jax_agents"
"""The entry-point group of JAX agents (``nslb_cli.api``, "JAX agents")."""
FUNCTIONS = ("init", "act", "update", "summary")
"""What every JAX agent class defines (``nslb_cli.api``, "JAX agents")."""


def check_jax_agent_class(name: str, cls: object) -> None:
    """Raise ``InvalidEntry`` unless ``cls`` is a class with the JAX agent contract's
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
    """Why the JAX class declared for agent ``name`` cannot be used (one line, naming the
    package), loading it; ``None`` when it can."""
    try:
        JAX_AGENTS[name]
    except Exception as err:  # PluginError: the registry's one line
        return str(err)
    return None


def built_in(name: str) -> type | None:
    """nslb's own JAX agent class for ``agent.name`` ``name``, if it has one (a plugin's
    class: ``None``)."""
    if name not in JAX_AGENTS or JAX_AGENTS.foreign(name):
        return None
    cls: type = JAX_AGENTS[name]
    return cls


def own() -> list[str]:
    """The names of nslb's own JAX agents (nothing is imported)."""
    return [name for name in JAX_AGENTS if not JAX_AGENTS.foreign(name)]
