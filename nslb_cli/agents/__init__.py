"""Agents. ``AGENTS`` is the one registry that maps the config's ``agent.name`` to a class.

Where each agent lives (config name -> module, class; the paper's algorithm):

=============  ============================  ===========================================
``mts``        ``thompson``                  ModelThompsonSampling (Algorithm 1)
``umts``       ``particle``                  UncertainModelThompsonSampling (Algorithm 3)
``sw_mucb``    ``ucb``                       SlidingWindowModelUCB (Algorithm 4)
``sw_umucb``   ``ucb``                       SlidingWindowUncertainModelUCB (appendix)
``exp3s``      ``exp``                       Exp3S (Auer et al. 2002)
``exp4s``      ``exp``                       Exp4S (the paper's Exp.S)
``cd_ucb``     ``changepoint``               CDUCB (Cao et al. 2019)
``cd_ts``      ``changepoint``               CDTS
``cd_linucb``  ``linear_changepoint``        CDLinUCB (the paper's section 5.2)
``cd_lints``   ``linear_changepoint``        CDLinTS
``oracle``     ``reference``                 Oracle
``random``     ``reference``                 UniformRandom
=============  ============================  ===========================================

Change detectors (used only by agents) are in :mod:`nslb_cli.agents.detectors`.
"""

from __future__ import annotations

from nslb_cli.agents.base import Agent, Belief
from nslb_cli.registry import Registry

AGENTS = Registry(
    "agent",
    {
        "mts": "nslb_cli.agents.thompson:ModelThompsonSampling",
        "umts": "nslb_cli.agents.particle:UncertainModelThompsonSampling",
        "oracle": "nslb_cli.agents.reference:Oracle",
        "random": "nslb_cli.agents.reference:UniformRandom",
        "exp3s": "nslb_cli.agents.exp:Exp3S",
        "exp4s": "nslb_cli.agents.exp:Exp4S",
        "cd_ucb": "nslb_cli.agents.changepoint:CDUCB",
        "cd_ts": "nslb_cli.agents.changepoint:CDTS",
        "cd_linucb": "nslb_cli.agents.linear_changepoint:CDLinUCB",
        "cd_lints": "nslb_cli.agents.linear_changepoint:CDLinTS",
        "sw_mucb": "nslb_cli.agents.ucb:SlidingWindowModelUCB",
        "sw_umucb": "nslb_cli.agents.ucb:SlidingWindowUncertainModelUCB",
    },
)

__all__ = ["AGENTS", "Agent", "Belief"]
