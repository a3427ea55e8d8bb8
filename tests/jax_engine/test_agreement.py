"""The engines agree: for every agent the JAX engine covers, in the paper's three synthetic
scenarios and with Bernoulli rewards, the mean final regret of 1,000 seeds of each engine is
within 3 combined standard errors (the engines draw different numbers: independent samples
of the same law). Horizons are shortened to keep the suite fast; umTS runs 10 particles. The
fast suite runs each agent in one scenario (every scenario by some agent) and one agent on
the piecewise problem, a program each; ``make test-full`` runs every agent in every one.
JAX runs in a child process (``run_apart``): a process that has compiled with JAX cannot
fork a working child, which other tests of the same worker need."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("jax")

from nslb_cli.agents import AGENTS  # noqa: E402
from nslb_cli.bandit.trace import Trace  # noqa: E402
from nslb_cli.common.apart import run_apart  # noqa: E402
from nslb_cli.envs.piecewise import PiecewiseParams  # noqa: E402
from nslb_cli.envs.synthetic import SyntheticParams  # noqa: E402
from nslb_cli.jax_engine.agents import own  # noqa: E402
from nslb_cli.jax_engine.engine import simulate_seeds as simulate_jax  # noqa: E402
from nslb_cli.runner.config import RunConfig, RunSettings  # noqa: E402
from nslb_cli.runner.job import simulate_seeds as simulate_numpy  # noqa: E402

SEEDS = np.arange(1000)
SCENARIOS = {
    "fixed/known": dict(dynamics="fixed", model="known", horizon=500),
    "markov/known": dict(dynamics="markov", model="known", horizon=500, switch_prob=0.01),
    "markov/prior": dict(dynamics="markov", model="prior", horizon=500, switch_prob=0.01),
    "bernoulli/known": dict(reward="bernoulli", model="known", horizon=500, switch_prob=0.01),
    "bernoulli/prior": dict(reward="bernoulli", model="prior", horizon=500, switch_prob=0.01),
}
AGENT_OPTIONS = {
    "umts": dict(num_particles=10),
    "umts/sample": dict(num_particles=10, action_selection="sample"),
}


def agent_params(label: str) -> object:
    name = label.split("/")[0]
    return AGENTS[name].Params(**AGENT_OPTIONS.get(label, {}))


def _regret_and_kinds(trace: Trace) -> tuple[np.ndarray, dict[str, str]]:
    """Per seed, the final regret; and the kind of each summary statistic (``i``: a count)."""
    return trace.regret.sum(axis=1), {k: v.dtype.kind for k, v in trace.summary.items()}


def final_regrets(env: object, agent: object) -> tuple[np.ndarray, np.ndarray]:
    """Per seed, the final regret of each engine (the numpy engine in batches of 500), once
    the engines are seen to write each statistic as the same kind of number."""
    jax_regret, jax_kinds = run_apart(
        lambda: _regret_and_kinds(simulate_jax(env, agent, SEEDS, len(SEEDS))), "the JAX engine"
    )
    config = RunConfig("agreement", env, agent, RunSettings(n_seeds=len(SEEDS), batch_size=500))
    parts = [_regret_and_kinds(simulate_numpy(config, part)) for part in np.split(SEEDS, 2)]
    assert jax_kinds == parts[0][1]
    return jax_regret, np.concatenate([regret for regret, _ in parts])


def assert_agree(jax_regret: np.ndarray, numpy_regret: np.ndarray) -> None:
    se = np.sqrt(
        jax_regret.var(ddof=1) / len(jax_regret) + numpy_regret.var(ddof=1) / len(numpy_regret)
    )
    gap = jax_regret.mean() - numpy_regret.mean()
    assert abs(gap) <= 3 * se, (
        f"jax {jax_regret.mean():.2f}, numpy {numpy_regret.mean():.2f}, 3 SE {3 * se:.2f}"
    )


LABELS = [*(a for a in own() if a != "oracle"), "umts/sample"]
IN_CI = {  # an agent's scenario in the fast suite: umTS learns a Gaussian prior (its sampler and
    # a Bernoulli prior: make test-full; the batch test of test_cli.py runs umTS on a known model)
    "mts": "markov/known", "umts": "markov/prior",
    "sw_mucb": "bernoulli/known", "cd_ucb": "bernoulli/prior", "cd_ts": "markov/known",
    "exp4s": "markov/prior", "random": "fixed/known",
}  # fmt: skip


def _in_ci(label: str, scenario: str) -> tuple[pytest.MarkDecorator, ...]:
    return () if IN_CI.get(label) == scenario else (pytest.mark.slow,)


@pytest.mark.parametrize(
    ("label", "scenario"),
    [pytest.param(label, s, marks=_in_ci(label, s)) for label in LABELS for s in SCENARIOS],
)
def test_engines_agree_on_synthetic(label: str, scenario: str) -> None:
    assert_agree(*final_regrets(SyntheticParams(**SCENARIOS[scenario]), agent_params(label)))


@pytest.mark.parametrize(
    "label",  # a detector in the fast suite: the others with make test-full
    [pytest.param(a, marks=() if a == "cd_ucb" else pytest.mark.slow)
     for a in ("mts", "cd_ucb", "cd_ts", "sw_mucb", "exp4s")],
)  # fmt: skip
def test_engines_agree_on_piecewise(label: str) -> None:
    env = PiecewiseParams(horizon=1000, change_points=[0, 200, 400, 600, 800])
    assert_agree(*final_regrets(env, agent_params(label)))


def test_the_oracle_has_no_regret_and_sees_the_true_state() -> None:
    env = SyntheticParams(model="prior", horizon=50)
    trace = run_apart(lambda: simulate_jax(env, agent_params("oracle"), SEEDS[:20], 20), "JAX")
    assert np.all(trace.regret == 0)
    assert np.array_equal(trace.belief, trace.state) and np.all(trace.p_true_state == 1)
