"""Agents. ``AGENTS`` is the one registry that maps the config's ``agent.name`` to a class.

Every agent, built-in or from another installed package, is an entry point of the group
``nslb.agents`` (nslb's own are declared in its ``pyproject.toml``; how to add one:
:mod:`nslb_cli.api`). Where the built-ins live (config name -> module, class; the paper's
algorithm; docs/design.md §4):

=============  ======================  ===============================================
``mts``        ``thompson``            ModelThompsonSampling (Algorithm 1)
``umts``       ``umts/`` (a package)   UncertainModelThompsonSampling (Algorithm 3)
``sw_mucb``    ``ucb``                 SlidingWindowModelUCB (Algorithm 4)
``sw_umucb``   ``ucb``                 SlidingWindowUncertainModelUCB (appendix)
``exp3s``      ``exp``                 Exp3S (Auer et al. 2002)
``exp4s``      ``exp``                 Exp4S (the paper's Exp.S)
``cd_ucb``     ``changepoint``         CDUCB (Cao et al. 2019)
``cd_ts``      ``changepoint``         CDTS
``cd_linucb``  ``linear_changepoint``  CDLinUCB (the paper's section 5.2)
``cd_lints``   ``linear_changepoint``  CDLinTS
``oracle``     ``reference``           Oracle
``random``     ``reference``           UniformRandom
=============  ======================  ===============================================

What they share: :mod:`.base` (the interface), :mod:`.detectors` and :mod:`.restarting`
(change detectors and the agents they restart), :mod:`.tuning` (defaults computed from the
horizon and the offline model), :mod:`.round_draws` (per-round draws in blocks), and the
compiled linear algebra of the linear agents (:mod:`.linalg`, :mod:`.linear_kernels`).

May import: :mod:`nslb_cli.core` and :mod:`nslb_cli.config`. Never the world (an agent is told
the problem and the offline model; the oracle, a :class:`~nslb_cli.core.problem.Truth`), the
environments, the data or the runner.
"""

from __future__ import annotations

import inspect

from nslb_cli.agents.base import Agent, Belief
from nslb_cli.config.registry import InvalidEntry, Registry, require_params

GROUP = "nslb.agents"


def check_agent_class(name: str, cls: object) -> None:
    """Raise :class:`~nslb_cli.config.registry.InvalidEntry` unless ``cls`` is a concrete
    :class:`Agent` with a valid ``Params`` dataclass for the name ``name``."""
    if not (isinstance(cls, type) and issubclass(cls, Agent)):
        raise InvalidEntry(f"{cls!r} is not a subclass of nslb_cli.api.Agent")
    if inspect.isabstract(cls):
        missing = ", ".join(sorted(cls.__abstractmethods__))
        raise InvalidEntry(f"{cls.__name__} does not implement {missing}")
    require_params(name, cls)


AGENTS = Registry("agent", GROUP, check_agent_class)

__all__ = ["AGENTS", "Agent", "Belief"]
