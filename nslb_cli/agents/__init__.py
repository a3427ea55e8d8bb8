"""Agents. ``AGENTS`` is the one registry that maps the config's ``agent.name`` to a class.

Every agent, built-in or from another installed package, is an entry point of the group
``nslb.agents`` (nslb's own are declared in its ``pyproject.toml``, which names each one's
module and class; how to add one: ``nslb_cli.api``, and docs/development.md). The
latent-model agents of Hong et al. are in ``mts``, ``umts/`` and ``mucb``, the field's
model-free baselines beside them (docs/design.md §4). An agent's class declares all nslb
needs to know of it: its ``Params`` (the config option ``agent=NAME`` and its defaults) and
how reports show it (``Agent``).

What they share: ``.base`` (the interface), ``.detectors`` and ``.restarting``
(change detectors and the agents they restart), ``.tuning`` (defaults computed from the
horizon and the offline model), ``.round_draws`` (per-round draws in blocks), and the
compiled linear algebra of the linear agents (``.linalg``, ``.linear_kernels``).

May import: ``nslb_cli.bandit``, ``nslb_cli.compiled`` and ``nslb_cli.common``.
Never the world (an agent is told the problem and the offline model; the oracle, a
``Truth``), the environments, the data or the runner.
"""

from __future__ import annotations

import inspect

from nslb_cli.agents.base import Agent, Belief
from nslb_cli.common.registry import InvalidEntry, Registry, require_params

GROUP = "nslb.agents"


def check_agent_class(name: str, cls: object) -> None:
    """Raise ``InvalidEntry`` unless ``cls`` is a concrete
    ``Agent`` with a valid ``Params`` dataclass for the name ``name``."""
    if not (isinstance(cls, type) and issubclass(cls, Agent)):
        raise InvalidEntry(f"{cls!r} is not a subclass of nslb_cli.api.Agent")
    if inspect.isabstract(cls):
        missing = ", ".join(sorted(cls.__abstractmethods__))
        raise InvalidEntry(f"{cls.__name__} does not implement {missing}")
    require_params(name, cls)


AGENTS = Registry("agent", GROUP, check_agent_class)

__all__ = ["AGENTS", "Agent", "Belief"]
