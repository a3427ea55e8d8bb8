"""The one agent interface every agent implements.

An agent is built from ``(params, problem, offline_model, rng)``: its parameters, the
:class:`~nslb_cli.core.problem.Problem`, the :class:`~nslb_cli.core.problem.OfflineModel`
(model-free agents ignore it) and its own random streams. Nothing else about the environment
reaches an agent, except for reference agents that declare ``sees_truth`` (the oracle): they
also get a :class:`~nslb_cli.core.problem.Truth` (see
:func:`nslb_cli.runner.simulate.build_agent`).

Each round the simulator calls ``act`` then ``update``; ``belief`` reports what the agent
believes about the latent state, where it has such a belief.

All arrays have a leading runs axis: one agent object plays a batch of independent runs.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from nslb_cli.core.problem import OfflineModel, Problem
from nslb_cli.core.rng import BatchRNG


@dataclass(frozen=True)
class Belief:
    """An agent's view of the latent state in the current round.

    Attributes:
        state: ``(R,)`` the believed state ``B_t``.
        posterior: ``(R, S)`` the probability the agent puts on each state.
    """

    state: np.ndarray
    posterior: np.ndarray


class Agent(ABC):
    """Base class: a batch of identical agents, one per run."""

    Params: ClassVar[type]
    sees_truth: ClassVar[bool] = False
    fixed_arms: ClassVar[bool] = False  # learns per arm: arm a must be one item every round
    # its rounds are spent in compiled code that releases the GIL: parts of a batch gain from
    # being simulated in threads at once (nslb_cli.runner.parts)
    concurrent: ClassVar[bool] = False

    def __init__(self, params: Any, problem: Problem, model: OfflineModel, rng: BatchRNG) -> None:
        self.params = params
        self.problem = problem
        self.model = model
        self.rng = rng

    @abstractmethod
    def act(self, t: int, contexts: np.ndarray | None) -> np.ndarray:
        """Choose ``A_t`` for every run, shape ``(R,)``."""

    @abstractmethod
    def update(
        self, t: int, contexts: np.ndarray | None, actions: np.ndarray, rewards: np.ndarray
    ) -> None:
        """Observe ``R_t`` for the actions just taken."""

    def belief(self) -> Belief | None:
        """The belief behind the last ``act``, or ``None`` if the agent has none."""
        return None

    def summary(self) -> dict[str, np.ndarray]:
        """Per-run statistics to store beside the CSVs (e.g. detected changes), ``(R,)`` each."""
        return {}
