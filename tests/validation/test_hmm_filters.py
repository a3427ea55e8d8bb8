"""nslb's discrete filters against Dynamax's ``hmm_filter`` (``make validate``).

mTS and the filter oracle keep ``P_t``, the distribution of ``S_t`` given the rewards of
rounds ``0 … t-1`` (docs/design.md §4.1): Dynamax's ``predicted_probs[t]``. Dynamax is given
the true model (its ``transition_matrix[i, j] = p(z' = j | z = i)``) and log-likelihoods
built here from the true reward laws and the arms and rewards the agent played; every
round's belief must agree to 1e-10. The switching-latent problem has a cyclic, far from
symmetric ``P``, so a filter that used ``P'`` (or Dynamax given ``P'``) is caught: the tests
show that comparison failing too. The JAX engine's synthetic worlds tell mTS a symmetric
``P``; its filter meets a non-symmetric one by playing the JAX agent directly.

Dynamax runs in a child process (``run_apart``): a process that has compiled with JAX
cannot fork a working child later, which other tests of the same worker need. Importing the
top-level package alone starts no JAX backend.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("dynamax")

from nslb_cli.agents.base import Agent, Belief  # noqa: E402
from nslb_cli.agents.filter_oracle import FilterOracle  # noqa: E402
from nslb_cli.agents.mts import ModelThompsonSampling, MTSParams  # noqa: E402
from nslb_cli.bandit.problem import Problem  # noqa: E402
from nslb_cli.bandit.rewards import Gaussian  # noqa: E402
from nslb_cli.bandit.rng import BatchRNG  # noqa: E402
from nslb_cli.bandit.trace import Trace  # noqa: E402
from nslb_cli.bandit.world import World  # noqa: E402
from nslb_cli.common.apart import run_apart  # noqa: E402
from nslb_cli.envs.switching_latent import SwitchingLatent, SwitchingLatentParams  # noqa: E402
from nslb_cli.envs.synthetic import SyntheticParams  # noqa: E402
from nslb_cli.runner.simulate import build_agent, simulate  # noqa: E402

TOLERANCE = 1e-10
SEEDS = np.arange(4)
HORIZON = 400
# A cyclic chain: from state i it moves on to i + 1 far more often than back to i - 1.
CYCLIC = np.array([[0.60, 0.35, 0.05], [0.05, 0.60, 0.35], [0.35, 0.05, 0.60]])
AGENTS: dict[str, type[Agent]] = {"mts": ModelThompsonSampling, "filter_oracle": FilterOracle}


def predicted_probs(
    initial: np.ndarray, transitions: list[np.ndarray], log_lik: np.ndarray
) -> np.ndarray:
    """Dynamax's ``predicted_probs``, ``(M, R, n, S)``, of each transition matrix ``(R, S, S)``
    for every run of ``log_lik`` ``(R, n, S)`` with first distribution ``initial`` ``(R, S)``,
    in float64. Run it in a child process."""
    import jax
    import jax.numpy as jnp
    from dynamax.hidden_markov_model import hmm_filter

    jax.config.update("jax_enable_x64", True)
    out = np.empty((len(transitions), *log_lik.shape))
    for m, matrix in enumerate(transitions):
        for r in range(len(log_lik)):
            post = hmm_filter(
                jnp.asarray(initial[r]), jnp.asarray(matrix[r]), jnp.asarray(log_lik[r])
            )
            assert post.predicted_probs.dtype == jnp.float64
            out[m, r] = np.asarray(post.predicted_probs)
    return out


def gaussian_log_lik(
    means: np.ndarray, actions: np.ndarray, rewards: np.ndarray, sigma: float
) -> np.ndarray:
    """``log N(R_t; mu(A_t, s), sigma^2)``, ``(R, n, S)``, for means ``(R, S, K)``."""
    runs = np.arange(len(means))[:, None]
    pulled = means[runs, :, actions]  # (R, n, S)
    return -0.5 * ((rewards[..., None] - pulled) / sigma) ** 2 - np.log(sigma * np.sqrt(2 * np.pi))


def played(cls: type[Agent], world: World) -> tuple[Trace, np.ndarray]:
    """The trace of ``cls`` in ``world`` and the full belief ``P_t`` behind each round's
    action, ``(R, n, S)``, as the agent reported it."""
    agent = build_agent(cls, cls.Params(), world, BatchRNG(world.seeds))
    beliefs: list[np.ndarray] = []
    reported = agent.belief

    def belief() -> Belief | None:
        view = reported()
        assert view is not None
        beliefs.append(np.array(view.posterior))
        return view

    agent.belief = belief  # type: ignore[method-assign]
    trace = simulate(world, agent, progress=False)
    return trace, np.stack(beliefs, axis=1)


def cyclic_world(folder: Path) -> tuple[World, np.ndarray]:
    """A switching-latent world of ``CYCLIC`` read from a problem file, and its outcome
    laws ``O[s, a, o]`` (3 states, 4 arms, 5 outcomes)."""
    laws = np.random.default_rng(2024).dirichlet(np.full(5, 0.7), size=(3, 4))
    path = folder / "problem.json"
    path.write_text(json.dumps({"transitions": CYCLIC.tolist(), "observations": laws.tolist()}))
    params = SwitchingLatentParams(problem=str(path), horizon=HORIZON)
    return SwitchingLatent.build(params, SEEDS), laws


def categorical_log_lik(laws: np.ndarray, trace: Trace) -> np.ndarray:
    """``log O[s, A_t, o_t]``, ``(R, n, S)``; the outcome ``o_t`` read from its reward
    ``r[o] = o / (N - 1)``."""
    values = np.linspace(0.0, 1.0, laws.shape[2])
    outcomes = np.abs(trace.reward[..., None] - values).argmin(axis=-1)
    assert (values[outcomes] == trace.reward).all()
    return np.log(np.moveaxis(laws[:, trace.action, outcomes], 0, -1))


def true_state_probs(predicted: np.ndarray, states: np.ndarray) -> np.ndarray:
    """``predicted[r, t, S_t]``, ``(R, n)``."""
    return np.take_along_axis(predicted, states[..., None], axis=-1)[..., 0]


def numpy_gaps(folder: Path) -> dict[str, dict[str, float]]:
    """Per agent, the largest gaps between its beliefs and Dynamax's predicted
    probabilities: ``belief`` (every state), ``p_true_state`` (the trace's column), and
    ``transposed`` (Dynamax given ``P'``)."""
    world, laws = cyclic_world(folder)
    assert np.abs(CYCLIC - CYCLIC.T).max() >= 0.3
    told = world.offline_model.transitions  # what the agents filter with: the file's P
    np.testing.assert_allclose(told, np.broadcast_to(CYCLIC, told.shape), rtol=0, atol=1e-15)
    initial = np.full((len(SEEDS), 3), 1.0 / 3.0)
    matrices = [np.broadcast_to(CYCLIC, (len(SEEDS), 3, 3))]
    matrices.append(matrices[0].transpose(0, 2, 1))
    runs = {name: played(cls, world) for name, cls in AGENTS.items()}
    log_lik = np.stack([categorical_log_lik(laws, trace) for trace, _ in runs.values()])
    predicted = run_apart(
        lambda: [predicted_probs(initial, matrices, ll) for ll in log_lik], "Dynamax"
    )
    gaps = {}
    for (name, (trace, beliefs)), (right, transposed) in zip(runs.items(), predicted, strict=True):
        gaps[name] = {
            "belief": float(np.abs(beliefs - right).max()),
            "p_true_state": float(
                np.abs(trace.p_true_state - true_state_probs(right, world.states)).max()
            ),
            "transposed": float(np.abs(beliefs - transposed).max()),
        }
    return gaps


def test_mts_and_the_filter_oracle_keep_dynamaxs_predicted_probabilities(tmp_path: Path) -> None:
    for name, gap in numpy_gaps(tmp_path).items():
        assert gap["belief"] <= TOLERANCE, (name, gap)
        assert gap["p_true_state"] <= TOLERANCE, (name, gap)
        assert gap["transposed"] > 0.05, (name, gap)  # the check can fail


def engine_run(env: SyntheticParams) -> dict[str, np.ndarray]:
    """The JAX engine's trace of mTS for ``SEEDS`` and each seed's offline model as the
    engine draws it (the same key: ``jax.random.key(seed)``, threefry). In a child."""
    import jax

    from nslb_cli.jax_engine.engine import simulate_seeds
    from nslb_cli.jax_engine.scan import pinned_numbers
    from nslb_cli.jax_engine.worlds import SyntheticWorld

    trace = simulate_seeds(env, MTSParams(), SEEDS, len(SEEDS))
    spec = SyntheticWorld.of(env)
    with pinned_numbers():
        models = [spec.draw(jax.random.key(int(s), impl="threefry2x32")).model for s in SEEDS]
    names = ("action", "reward", "expected_reward", "state", "p_true_state")
    columns = {name: getattr(trace, name) for name in names}
    for field in ("means", "transitions", "initial"):
        columns[field] = np.stack([np.asarray(getattr(m, field)) for m in models])
    return columns


def engine_gaps() -> dict[str, float]:
    """The JAX engine's ``p_true_state`` against Dynamax's predicted probability of the true
    state (``p_true_state``) and against the next round's (``late``: a filter that reported
    its belief after the reward); ``spread``, the range of the true state's probability."""
    env = SyntheticParams(horizon=HORIZON, switch_prob=0.05)
    run = run_apart(lambda: engine_run(env), "the JAX engine")
    runs = np.arange(len(SEEDS))[:, None]
    pulled = run["means"][runs, run["state"], run["action"]]
    assert (pulled == run["expected_reward"]).all()  # the model drawn again is the engine's
    log_lik = gaussian_log_lik(run["means"], run["action"], run["reward"], env.sigma)
    matrices = [run["transitions"]]
    predicted = run_apart(lambda: predicted_probs(run["initial"], matrices, log_lik), "Dynamax")
    right = true_state_probs(predicted[0], run["state"])
    late = true_state_probs(predicted[0][:, 1:], run["state"][:, :-1])
    return {
        "p_true_state": float(np.abs(run["p_true_state"] - right).max()),
        "late": float(np.abs(run["p_true_state"][:, :-1] - late).max()),
        "spread": float(right.max() - right.min()),
        "asymmetry": float(np.abs(matrices[0] - matrices[0].transpose(0, 2, 1)).max()),
    }


def test_the_jax_engines_mts_keeps_dynamaxs_predicted_probability_of_the_true_state() -> None:
    gap = engine_gaps()
    assert gap["p_true_state"] <= TOLERANCE, gap
    assert gap["late"] > 0.05 and gap["spread"] > 0.5, gap  # the check can fail
    assert gap["asymmetry"] == 0.0, gap  # P = P' here: the cyclic chain below checks P'


def jax_agent_run(
    means: np.ndarray, transitions: np.ndarray, states: np.ndarray, noise: np.ndarray, sigma: float
) -> dict[str, np.ndarray]:
    """The JAX engine's mTS agent played round by round in one compiled scan per run, on
    Gaussian rewards ``means[S_t, A_t] + sigma eps_t`` of the given paths ``(R, n)``: its
    arms, rewards and beliefs ``(R, n, S)``. In a child."""
    import jax
    import jax.numpy as jnp

    from nslb_cli.jax_engine.contract import Model, Setting
    from nslb_cli.jax_engine.mts import MTS

    S, K = means.shape
    problem = Problem(K, S, states.shape[1], sigma, 1, Gaussian(sigma))
    agent = MTS(MTSParams(), Setting(problem, learns_transitions=False, learns_means=False))
    table: dict[str, list[np.ndarray]] = {"action": [], "reward": [], "belief": []}
    with jax.enable_x64(True):
        mu, phi = jnp.asarray(means), jnp.asarray(transitions)
        model = Model(mu, jnp.zeros_like(mu), phi, jnp.ones_like(phi), jnp.full(S, 1.0 / S))

        def round_(state: Any, inputs: tuple[Any, ...]) -> tuple[Any, tuple[Any, ...]]:
            key, t, s, eps = inputs
            act_key, update_key = jax.random.split(key)
            state, decision = agent.act(state, t, act_key, None)
            reward = mu[s, decision.action] + sigma * eps
            state = agent.update(state, t, decision.action, reward, update_key)
            return state, (decision.action, reward, decision.posterior)

        @jax.jit
        def play(seed: Any, path: Any, eps: Any) -> tuple[Any, ...]:
            keys = jax.random.split(jax.random.key(seed), path.shape[0])
            rounds = jnp.arange(path.shape[0])
            start = agent.init(model, keys[0])
            return jax.lax.scan(round_, start, (keys, rounds, path, eps))[1]

        for r in range(len(states)):
            for name, column in zip(table, play(r, states[r], noise[r]), strict=True):
                table[name].append(np.asarray(column))
    return {name: np.stack(column) for name, column in table.items()}


def markov_paths(P: np.ndarray, runs: int, n: int, rng: np.random.Generator) -> np.ndarray:
    """``runs`` paths of the chain ``P`` from a uniform first state, ``(runs, n)``."""
    paths = np.empty((runs, n), dtype=np.int64)
    paths[:, 0] = rng.integers(len(P), size=runs)
    for t in range(1, n):
        u = rng.random(runs)
        paths[:, t] = (P[paths[:, t - 1]].cumsum(axis=1) < u[:, None]).sum(axis=1)
    return paths


def jax_agent_gaps() -> dict[str, float]:
    """The JAX agent's beliefs against Dynamax's predicted probabilities, given ``P``
    (``belief``) and ``P'`` (``transposed``), on ``CYCLIC`` with Gaussian rewards."""
    rng = np.random.default_rng(7)
    means, sigma = rng.uniform(0.0, 1.0, (3, 4)), 0.5
    states = markov_paths(CYCLIC, len(SEEDS), HORIZON, rng)
    noise = rng.standard_normal(states.shape)
    run = run_apart(lambda: jax_agent_run(means, CYCLIC, states, noise, sigma), "the JAX agent")
    assert np.allclose(run["reward"], means[states, run["action"]] + sigma * noise, 0, 1e-12)
    repeated = np.broadcast_to(means, (len(SEEDS), 3, 4))
    log_lik = gaussian_log_lik(repeated, run["action"], run["reward"], sigma)
    initial = np.full((len(SEEDS), 3), 1.0 / 3.0)
    matrices = [np.broadcast_to(CYCLIC, (len(SEEDS), 3, 3))]
    matrices.append(matrices[0].transpose(0, 2, 1))
    right, transposed = run_apart(lambda: predicted_probs(initial, matrices, log_lik), "Dynamax")
    return {
        "belief": float(np.abs(run["belief"] - right).max()),
        "transposed": float(np.abs(run["belief"] - transposed).max()),
    }


def test_the_jax_mts_agent_keeps_dynamaxs_predicted_probabilities_for_a_cyclic_chain() -> None:
    gap = jax_agent_gaps()
    assert gap["belief"] <= TOLERANCE, gap
    assert gap["transposed"] > 0.05, gap  # the check can fail
