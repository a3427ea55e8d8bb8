"""The one agent interface every agent implements.

An agent is built from ``(params, problem, offline_model, rng)``; one that declares
``sees_truth`` (the oracle) also gets a ``Truth``. Each round the
simulator calls ``act`` then ``update``. All arrays have a leading runs axis (the plugin
contract: ``nslb_cli.api``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from nslb_cli.bandit.problem import FLOAT, OfflineModel, Problem, Sizes
from nslb_cli.bandit.rng import BatchRNG

LineStyle = str | tuple[int, tuple[int, ...]]
"""A matplotlib line style: a name (``"--"``) or an ``(offset, (on, off, ...))`` dash pattern."""


@dataclass(frozen=True)
class Style:
    """How reports draw an agent: a matplotlib colour, line style and marker."""

    color: str
    linestyle: LineStyle
    marker: str


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
    # the kind of latent model it acts on ("discrete": the offline model's states and chain;
    # "autoregressive": its AR process), refused on an environment whose ``latent`` (default
    # "discrete") differs; None: any environment
    latent_model: ClassVar[str | None] = None
    # it acts on the offline model as the world's truth: refused unless the environment's
    # ``true_model(params)`` says its agents are told the true model
    needs_true_model: ClassVar[bool] = False
    # its rounds are spent in compiled code that releases the GIL: parts of a batch gain from
    # being simulated in threads at once (nslb_cli.runner.parts)
    concurrent: ClassVar[bool] = False
    # how reports (nslb plot) show it: its name in legends and labels (None: its config name),
    # its place in legends (lower first; None: after every agent that has one, by name) and
    # its style in every figure (None: the report's next free colour, line style and marker)
    display_name: ClassVar[str | None] = None
    legend_rank: ClassVar[int | None] = None
    style: ClassVar[Style | None] = None

    @classmethod
    def memory(cls, params: Any, sizes: Sizes) -> dict[str, int]:
        """The bytes this agent keeps for a batch of ``sizes.n_runs`` runs, as
        ``{config key: bytes}``: each term keyed by the key whose value makes it grow (one of
        the agent's own, ``agent.KEY``, or of the environment, ``env.KEY``; several joined by
        ``", "`` when it grows with each). A lower bound: arrays, not temporaries.

        The default, statistics per state: ``8 R S (2K + S)`` bytes keyed ``env.n_states,
        env.n_arms`` without contexts, ``8 R S (d^2 + d)`` keyed ``sizes.features_key`` with.
        """
        R, K, S, d = sizes.n_runs, sizes.n_arms, sizes.n_states, sizes.n_features
        if d:
            return {sizes.features_key: R * S * (d * d + d) * FLOAT}
        return {"env.n_states, env.n_arms": R * S * (2 * K + S) * FLOAT}

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

    def detection_counts(self) -> np.ndarray | None:
        """The changes detected so far per run, ``(R,)``, for an agent that detects changes
        (read after every ``update``: the rounds in which it rises are the detections);
        ``None`` for one that does not."""
        return None

    @classmethod
    def notes(cls, params: Any, summary: dict[str, np.ndarray], env: Any) -> list[str]:
        """What a run's log line should say of how the agent played in environment ``env`` (its
        params), read from the summary of the job's first batch (either engine's): e.g. that a
        default made it play as ``random``."""
        return []


class Windowed(Agent):
    """Base class of the agents that keep each run's last ``params.tau`` observations."""

    # its window slides over the last tau rounds: one of tau >= n rounds holds the whole run
    # and is run as tau = n on both engines (the job's line says so); False: a detector's
    # window, which never fills when longer than the run
    slides: ClassVar[bool] = False

    @classmethod
    def memory(cls, params: Any, sizes: Sizes) -> dict[str, int]:
        """The default statistics and the window of the last ``tau`` observations (an arm or
        a context, and a reward; twice, for the two halves a change detector compares):
        ``8 * 2 R tau max(K, d + 1)`` bytes keyed ``agent.tau``. A window left to the agent's
        default (``tau = None``) counts as the horizon, the longest such a default can be."""
        window = sizes.horizon if params.tau is None else params.tau
        width = max(sizes.n_arms, sizes.n_features + 1)
        return super().memory(params, sizes) | {
            "agent.tau": 2 * sizes.n_runs * window * width * FLOAT
        }
