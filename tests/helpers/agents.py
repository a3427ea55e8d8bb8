"""Agents built and run as the CLI builds them, on the synthetic environment."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from nslb_cli.agents import AGENTS
from nslb_cli.envs.synthetic import SyntheticParams
from nslb_cli.runner.config import RunConfig, RunSettings
from nslb_cli.runner.job import simulate_seeds
from nslb_cli.runner.simulate import Trace


def agent_params(name: str, **overrides: object) -> object:
    """Default parameters of agent ``name`` with ``overrides``."""
    return replace(AGENTS[name].Params(), **overrides)


def run_agent(
    agent: str,
    seeds: np.ndarray | list[int],
    env: SyntheticParams | None = None,
    **agent_overrides: object,
) -> Trace:
    """Simulate ``agent`` on the synthetic env for ``seeds`` (one batch), as a job would."""
    config = RunConfig(
        name="test",
        env=env or SyntheticParams(),
        agent=agent_params(agent, **agent_overrides),
        run=RunSettings(seed=0, n_seeds=1, progress=False),
    )
    return simulate_seeds(config, np.asarray(seeds))


def against_random(cls: type, params: object, reward: str, n_seeds: int = 20) -> tuple:
    """Final regret per seed of ``cls(params)`` and of uniform random play on the paper's
    fixed scenario (``reward`` rewards), and the agent's per-seed summary."""
    from nslb_cli.agents.reference import UniformRandom
    from nslb_cli.bandit.rng import BatchRNG
    from nslb_cli.runner.simulate import build_agent, simulate
    from tests.helpers.worlds import synthetic_world

    seeds = list(range(n_seeds))
    world = synthetic_world(seeds, dynamics="fixed", model="known", reward=reward)
    agent = build_agent(cls, params, world, BatchRNG(seeds))
    regret = simulate(world, agent, progress=False).regret.sum(axis=1)
    random = build_agent(UniformRandom, UniformRandom.Params(), world, BatchRNG(seeds))
    baseline = simulate(world, random, progress=False).regret.sum(axis=1)
    return regret, baseline, agent.summary()


def two_state_agent(
    cls: type, runs: int, arms: int, horizon: int, model: object | None, **params: object
) -> object:
    """An agent of class ``cls`` for ``runs`` runs (its default parameters with ``params``),
    told a two-state chain switching every 200 rounds, with Gaussian(0.5) rewards unless
    ``model`` says otherwise."""
    from nslb_cli.bandit.problem import OfflineModel, Problem
    from nslb_cli.bandit.rewards import Gaussian
    from nslb_cli.bandit.rng import BatchRNG
    from nslb_cli.envs.synthetic import uniform_switching

    model = model or Gaussian(0.5)
    problem = Problem(arms, 2, horizon, model.scale, runs, model)  # type: ignore[attr-defined]
    offline = OfflineModel(
        means=np.zeros((runs, 2, arms)),
        mean_sd=np.zeros((runs, 2, arms)),
        transitions=np.broadcast_to(uniform_switching(2, 1 / 200), (runs, 2, 2)).copy(),
        concentration=None,
        initial=np.full((runs, 2), 0.5),
    )
    return cls(replace(cls.Params(), **params), problem, offline, BatchRNG(range(runs)))
