"""The round loop: the only code that touches both a world and an agent."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from tqdm import tqdm

from nslb_cli.agents.base import Agent
from nslb_cli.world import World

NO_BELIEF = -1


@dataclass
class Trace:
    """Per run and round, what happened; every array is ``(R, n)``.

    ``belief`` is ``NO_BELIEF`` and ``p_true_state`` NaN for agents without a belief.
    """

    seeds: np.ndarray
    action: np.ndarray
    reward: np.ndarray
    expected_reward: np.ndarray
    optimal_reward: np.ndarray
    state: np.ndarray
    belief: np.ndarray
    p_true_state: np.ndarray
    summary: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def regret(self) -> np.ndarray:
        """``max_a mu(a, X_t, S_t) - mu(A_t, X_t, S_t)``: the expected, noise-free regret."""
        return self.optimal_reward - self.expected_reward


def simulate(world: World, agent: Agent, progress: bool | None = None) -> Trace:
    """Play ``agent`` in ``world`` for the whole horizon.

    ``progress``: show a progress bar (``None``: only on a terminal).
    """
    R, n = world.states.shape
    action = np.empty((R, n), dtype=np.int64)
    reward = np.empty((R, n))
    expected = np.empty((R, n))
    belief = np.full((R, n), NO_BELIEF, dtype=np.int64)
    p_true = np.full((R, n), np.nan)
    runs = np.arange(R)
    disable = None if progress is None else not progress
    for t in tqdm(range(n), desc="rounds", leave=False, disable=disable, mininterval=0.5):
        contexts = world.context(t)
        a = agent.act(t, contexts)
        view = agent.belief()
        if view is not None:
            belief[:, t] = view.state
            p_true[:, t] = view.posterior[runs, world.states[:, t]]
        r = world.reward(t, a)
        agent.update(t, contexts, a, r)
        action[:, t] = a
        reward[:, t] = r
        expected[:, t] = world.expected_reward(t, a)
    return Trace(
        seeds=world.seeds,
        action=action,
        reward=reward,
        expected_reward=expected,
        optimal_reward=world.optimal_reward(),
        state=world.states,
        belief=belief,
        p_true_state=p_true,
        summary=agent.summary(),
    )
