"""SW-mUCB on the JAX engine against Algorithm 4 recomputed from its own trace: the window's
sums ``G_t(s)`` and counts ``N_t(s)``, which the engine keeps as rounds enter and leave,
summed afresh over the last ``tau`` rounds, give the state and arm it chose in every round."""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("jax")

from nslb_cli.agents import AGENTS  # noqa: E402
from nslb_cli.common.apart import run_apart  # noqa: E402
from nslb_cli.envs.synthetic import SyntheticParams  # noqa: E402


def _played(env: SyntheticParams, tau: int, seeds: np.ndarray) -> tuple[object, np.ndarray]:
    """The trace of SW-mUCB (window ``tau``) on ``seeds``, and each seed's offline means."""
    import jax

    from nslb_cli.jax_engine.engine import simulate_seeds, world_of

    trace = simulate_seeds(env, AGENTS["sw_mucb"].Params(tau=tau), seeds, len(seeds))
    with jax.enable_x64(True):
        world = world_of(env)
        means = [np.asarray(world.draw(jax.random.key(int(s))).model.means) for s in seeds]
    return trace, np.stack(means)


def _chosen(
    means: np.ndarray, window: list[tuple[int, float]], radius: float
) -> tuple[int, int, bool]:
    """Algorithm 4's ``(B_t, A_t)`` from the window's ``(B_l, residual)`` pairs, and whether
    no state was consistent (all were taken)."""
    S = means.shape[0]
    gaps, counts = np.zeros(S), np.zeros(S)
    for state, residual in window:
        gaps[state] += residual
        counts[state] += 1
    consistent = gaps <= radius * np.sqrt(counts)
    empty = not consistent.any()
    best = int(np.argmax(np.where(consistent[:, None] | empty, means, -np.inf)))
    return (*divmod(best, means.shape[1]), empty)


MISSPECIFIED = {"model": "prior", "prior_sd": 1.0}  # offline means far off: fallbacks


@pytest.mark.parametrize(("tau", "model"), [(1, {}), (7, {}), (50, {}), (50, MISSPECIFIED)])
def test_every_round_chooses_what_the_window_recomputed_chooses(
    tau: int, model: dict[str, object]
) -> None:
    env = SyntheticParams(horizon=400, dynamics="fixed", period=80, **model)
    seeds = np.arange(4)
    trace, means = run_apart(lambda: _played(env, tau, seeds), "the JAX engine")
    radius = env.sigma * math.sqrt(6.0 * math.log(env.horizon))
    for run in range(len(seeds)):
        window: list[tuple[int, float]] = []
        fallbacks = 0
        for t in range(env.horizon):
            state, action, empty = _chosen(means[run], window[-tau:], radius)
            assert (trace.belief[run, t], trace.action[run, t]) == (state, action), (run, t)
            fallbacks += empty
            window.append((state, means[run, state, action] - trace.reward[run, t]))
        assert trace.summary["fallbacks"][run] == fallbacks
    assert (trace.summary["fallbacks"].sum() > 0) == (model == MISSPECIFIED)


def test_a_state_whose_rounds_have_all_left_the_window_is_consistent_again() -> None:
    """Residuals 0.1 and 0.2 enter state 0's sum and leave it: kept as they come and go,
    the sum is 5.6e-17, not 0, and a state no round of the window believes would fail
    ``G <= radius sqrt(0) = 0``; the engine resets it, as the sum over the window has it."""

    def consistent_after_leaving() -> list[float]:
        import jax
        import jax.numpy as jnp

        from nslb_cli.jax_engine.contract import Model
        from nslb_cli.jax_engine.engine import agent_of, world_of

        with jax.enable_x64(True):
            env = SyntheticParams(n_states=2, n_arms=2, horizon=10)
            agent = agent_of(AGENTS["sw_mucb"].Params(tau=2), world_of(env))
            zeros = jnp.zeros((2, 2))
            window = agent.init(Model(zeros, zeros, zeros, zeros, jnp.zeros(2)), None)
            key = jax.random.key(0)
            for t, (state, reward) in enumerate([(0, -0.1), (0, -0.2), (1, 0.0), (1, 0.0)]):
                window = window._replace(state=jnp.asarray(state))
                window = agent.update(window, jnp.asarray(t), jnp.asarray(0), reward, key)
            _, decision = agent.act(window, jnp.asarray(4), key, None)
            return [float(p) for p in decision.posterior]

    assert run_apart(consistent_after_leaving, "the JAX engine") == [0.5, 0.5]
