"""The round loop: the only code that touches both a world and an agent."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from tqdm import tqdm

from nslb_cli.agents.base import Agent
from nslb_cli.bandit.detections import AlarmLog
from nslb_cli.bandit.rng import BatchRNG
from nslb_cli.bandit.trace import NO_BELIEF, Trace
from nslb_cli.bandit.world import World
from nslb_cli.common.stopping import check as check_stop


def build_agent(cls: type[Agent], params: Any, world: World, rng: BatchRNG) -> Agent:
    """An agent of class ``cls`` for ``world``, built from the problem, the offline model and its
    own streams; an agent that ``sees_truth`` (the oracle) also gets the world's ``Truth``."""
    truth = {"truth": world.truth} if cls.sees_truth else {}
    return cls(params, world.problem, world.offline_model, rng, **truth)


class Abandoned(Exception):
    """The round loop stopped because its caller gave up on it (``simulate``'s
    ``abandoned``): another part of the same batch failed."""


def simulate(
    world: World,
    agent: Agent,
    progress: bool | None = None,
    abandoned: Callable[[], bool] | None = None,
    label: str = "rounds",
) -> Trace:
    """Play ``agent`` in ``world`` for the whole horizon.

    ``progress``: show a progress bar (``None``: only on a terminal), named ``label``;
    ``abandoned``: asked every round, raising ``Abandoned`` once true.
    """
    R, n = world.states.shape
    action = np.empty((R, n), dtype=np.int64)
    reward = np.empty((R, n))
    expected = np.empty((R, n))
    belief = np.full((R, n), NO_BELIEF, dtype=np.int64)
    p_true = np.full((R, n), np.nan)
    runs = np.arange(R)
    disable = None if progress is None else not progress
    counts = agent.detection_counts()
    alarms = None if counts is None else AlarmLog(counts)
    for t in tqdm(range(n), desc=label, leave=False, disable=disable, mininterval=0.5):
        check_stop()  # a request to stop whose exception a library swallowed
        if abandoned is not None and abandoned():
            raise Abandoned(f"round {t}")
        contexts = world.context(t)
        a = agent.act(t, contexts)
        view = agent.belief()
        if view is not None:
            belief[:, t] = view.state
            p_true[:, t] = view.posterior[runs, world.states[:, t]]
        expected[:, t], r = world.outcome(t, a)
        agent.update(t, contexts, a, r)
        counts = agent.detection_counts()
        if alarms is not None and counts is not None:
            alarms.note(t, counts)
        action[:, t] = a
        reward[:, t] = r
    latent = world.states if world.problem.n_states > 1 else None  # change points known
    detected = {} if alarms is None else alarms.summary(latent)
    return Trace(
        seeds=world.seeds,
        action=action,
        reward=reward,
        expected_reward=expected,
        optimal_reward=world.optimal_reward(),
        state=world.states,
        belief=belief,
        p_true_state=p_true,
        summary=world.summary | agent.summary() | detected,  # the environment's statistics first
    )
