"""Agents. ``AGENTS`` is the one registry that maps the config's ``agent.name`` to a class.

Every agent, built-in or from another installed package, is an entry point of the group
``nslb.agents`` (nslb's own are declared in its ``pyproject.toml``; how to add one:
:mod:`nslb_cli.api`). Where the built-ins live (config name -> module, class, paper;
docs/design.md §4): the latent-model agents of Hong et al. in ``mts``, ``umts/`` and
``mucb``, the field's model-free baselines beside them:

=============  ======================  ===================================================
``mts``        ``mts``                 ModelThompsonSampling (the paper's Algorithm 1)
``umts``       ``umts/`` (a package)   UncertainModelThompsonSampling (Algorithm 3)
``sw_mucb``    ``mucb``                SlidingWindowModelUCB (Algorithm 4)
``sw_umucb``   ``mucb``                SlidingWindowUncertainModelUCB (appendix)
``exp3s``      ``exp``                 Exp3S (Auer et al. 2002)
``exp4s``      ``exp``                 Exp4S (the paper's Exp.S)
``cd_ucb``     ``changepoint``         CDUCB (Cao et al. 2019)
``cd_ts``      ``changepoint``         CDTS
``cd_linucb``  ``linear_changepoint``  CDLinUCB (the paper's section 5.2)
``cd_lints``   ``linear_changepoint``  CDLinTS
``sw_ucb``     ``switching_ucb``       SlidingWindowUCB (Garivier & Moulines 2011)
``d_ucb``      ``switching_ucb``       DiscountedUCB (Garivier & Moulines 2011)
``cusum_ucb``  ``cusum``               CUSUMUCB (Liu, Lee & Shroff 2018)
``glr_klucb``  ``glr``                 GLRklUCB (Besson et al. 2022)
``d_ts``       ``switching_ts``        DiscountedThompsonSampling (Raj & Kalyani 2017)
``sw_ts``      ``switching_ts``        SlidingWindowThompsonSampling (Trovò et al. 2020)
``bocd_ts``    ``bocd``                BOCDThompsonSampling (Mellor & Shapiro 2013)
``larl``       ``larl``                LARL (Trella et al. 2025; env=latent_ar)
``larl_etc``   ``larl``                LARLETC
``ar_ucb``     ``larl``                ARUCB (Bacchiocchi et al. 2024)
``rexp3``      ``rexp3``               Rexp3 (Besbes et al. 2014)
``oracle``     ``reference``           Oracle
``random``     ``reference``           UniformRandom
=============  ======================  ===================================================

and ``kalman_oracle`` in ``kalman``: KalmanOracle (a reference of env=latent_ar).

What they share: :mod:`.base` (the interface), :mod:`.detectors` and :mod:`.restarting`
(change detectors and the agents they restart), :mod:`.tuning` (defaults computed from the
horizon and the offline model), :mod:`.round_draws` (per-round draws in blocks), and the
compiled linear algebra of the linear agents (:mod:`.linalg`, :mod:`.linear_kernels`).

May import: :mod:`nslb_cli.bandit`, :mod:`nslb_cli.compiled` and :mod:`nslb_cli.common`.
Never the world (an agent is told the problem and the offline model; the oracle, a
:class:`~nslb_cli.bandit.problem.Truth`), the environments, the data or the runner.
"""

from __future__ import annotations

import inspect

from nslb_cli.agents.base import Agent, Belief
from nslb_cli.common.registry import InvalidEntry, Registry, require_params

GROUP = "nslb.agents"


def check_agent_class(name: str, cls: object) -> None:
    """Raise :class:`~nslb_cli.common.registry.InvalidEntry` unless ``cls`` is a concrete
    :class:`Agent` with a valid ``Params`` dataclass for the name ``name``."""
    if not (isinstance(cls, type) and issubclass(cls, Agent)):
        raise InvalidEntry(f"{cls!r} is not a subclass of nslb_cli.api.Agent")
    if inspect.isabstract(cls):
        missing = ", ".join(sorted(cls.__abstractmethods__))
        raise InvalidEntry(f"{cls.__name__} does not implement {missing}")
    require_params(name, cls)


AGENTS = Registry("agent", GROUP, check_agent_class)

__all__ = ["AGENTS", "Agent", "Belief"]
