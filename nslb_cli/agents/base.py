"""The one agent interface every agent implements.

An agent is built from its parameters, the :class:`~nslb_cli.models.Problem`, the
:class:`~nslb_cli.models.OfflineModel` (model-free agents ignore it) and its own random
streams. Each round the simulator calls ``act`` then ``update``; ``belief`` reports what the
agent believes about the latent state, where it has such a belief.

All arrays have a leading runs axis: one agent object plays a batch of independent runs.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from nslb_cli.models import OfflineModel, Problem
from nslb_cli.rng import BatchRNG
from nslb_cli.world import World


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

    def __init__(self, params: Any, problem: Problem, model: OfflineModel, rng: BatchRNG) -> None:
        self.params = params
        self.problem = problem
        self.model = model
        self.rng = rng

    @classmethod
    def from_world(cls, params: Any, world: World, rng: BatchRNG) -> Agent:
        """Build the agent from what a world tells agents: its problem and offline model."""
        return cls(params, world.problem, world.offline_model, rng)

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
