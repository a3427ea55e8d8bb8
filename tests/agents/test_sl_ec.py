"""SL-EC: its estimate of the transitions, its T0 rule, its arm-subset step, its filter, and
how it compares with the filter that knows the model."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from nslb_cli.agents.mts import ModelThompsonSampling, MTSParams, filter_step
from nslb_cli.agents.sl_ec import (
    SLECParams,
    SwitchingLatentExploreCommit,
    _replay,
    estimate_transitions,
    exploration_rule,
    explored_arms,
)
from nslb_cli.bandit.rng import BatchRNG, categorical
from nslb_cli.envs.switching_latent import SwitchingLatent, SwitchingLatentParams, draw_problem
from nslb_cli.envs.synthetic import Synthetic, SyntheticParams
from nslb_cli.runner.simulate import simulate
from nslb_cli.runner.warmup import warm_up
from tests.helpers.cli import nslb, said

PARAMS = SwitchingLatentParams(n_states=3, n_arms=4, n_outcomes=5, min_transition_prob=0.1)


def _explore(seed: int, rounds: int, arms: np.ndarray) -> tuple[np.ndarray, ...]:
    """A problem and ``rounds`` rounds of SL-EC's exploration on it (chain from ``rho``)."""
    rng = np.random.default_rng(seed)
    P, laws = draw_problem(PARAMS, rng)
    values, vectors = np.linalg.eig(P.T)
    rho = np.real(vectors[:, np.argmin(np.abs(values - 1))])
    rho /= rho.sum()
    sweep = np.stack([np.repeat(arms, len(arms)), np.tile(arms, len(arms))], axis=1).ravel()
    actions = np.resize(sweep, rounds)
    u = rng.random((2, rounds))
    states = np.empty(rounds, dtype=np.int64)
    states[0] = categorical(rho, u[0, 0])
    for t in range(1, rounds):
        states[t] = categorical(P[states[t - 1]], u[0, t])
    outcomes = categorical(laws[states, actions], u[1])
    return P, laws, actions, outcomes


def _errors(rounds: int, seeds: range) -> np.ndarray:
    arms = np.arange(4)
    errors = []
    for seed in seeds:
        P, laws, actions, outcomes = _explore(seed, rounds, arms)
        errors.append(np.abs(estimate_transitions(laws, arms, actions, outcomes) - P).sum())
    return np.array(errors)


def test_the_estimation_error_shrinks_with_more_exploration() -> None:
    short, long = _errors(320, range(20)), _errors(5120, range(20))
    difference = short - long  # paired: the same problems
    se = difference.std(ddof=1) / np.sqrt(len(difference))
    assert difference.mean() > 3 * se, (short.mean(), long.mean())
    assert long.mean() < short.mean() / 2  # about 1/sqrt(16) = 1/4 of it


def test_the_estimate_is_unbiased_on_a_large_sample() -> None:
    arms = np.arange(4)
    draws, truths = [], []
    for seed in range(8):
        P, laws, actions, outcomes = _explore(100 + seed, 100_000, arms)
        draws.append(estimate_transitions(laws, arms, actions, outcomes) - P)
        truths.append(P)
    bias = np.stack(draws)
    se = bias.std(axis=0, ddof=1) / np.sqrt(len(bias))
    assert (np.abs(bias.mean(axis=0)) < 4 * se + 1e-3).all()
    assert np.abs(bias).sum(axis=(1, 2)).mean() < 0.15


def test_exact_pair_frequencies_give_the_true_transitions() -> None:
    P, laws, _, _ = _explore(3, 2, np.arange(4))
    rho = np.linalg.matrix_power(P, 200)[0]
    pair = np.einsum("s,st,sao,tbp->abop", rho, P, laws, laws)  # p(o1, o2, | a1, a2)
    grid = np.indices((4, 4, 5, 5)).reshape(4, -1)
    weights = np.round(pair.ravel() * 1e5).astype(np.int64)
    counted = np.repeat(np.arange(grid.shape[1]), weights)
    actions = np.stack([grid[0, counted], grid[1, counted]], axis=1).ravel()
    outcomes = np.stack([grid[2, counted], grid[3, counted]], axis=1).ravel()
    estimate = estimate_transitions(laws, np.arange(4), actions, outcomes)
    assert np.abs(estimate - P).max() < 1e-2


def test_the_t0_rule_grows_as_the_horizon_to_the_two_thirds() -> None:
    P, laws, _, _ = _explore(5, 2, np.arange(4))
    one, eight = exploration_rule(laws, P, 1000, 0.1), exploration_rule(laws, P, 8000, 0.1)
    assert eight == pytest.approx(4 * one, rel=1e-12)
    assert exploration_rule(laws, P, 1000, 0.01) > one


def test_the_subset_step_explores_the_informative_arms() -> None:
    rng = np.random.default_rng(0)
    laws = np.tile(rng.dirichlet(np.ones(3), size=(1, 4)), (2, 1, 1))  # no arm tells states apart
    laws[:, 1] = [[0.9, 0.05, 0.05], [0.05, 0.05, 0.9]]
    laws[:, 3] = [[0.1, 0.8, 0.1], [0.45, 0.1, 0.45]]
    assert np.array_equal(explored_arms(laws, 2), [1, 3])
    assert np.array_equal(explored_arms(laws, None), np.arange(4))


def test_the_replayed_filter_is_the_forward_filter() -> None:
    P, laws, actions, outcomes = _explore(7, 40, np.arange(4))
    belief = np.full((3, 1), 1 / 3)
    for a, o in zip(actions, outcomes, strict=True):
        belief = filter_step(belief, np.log(laws[:, a, o])[:, None], P[:, :, None])
    assert np.allclose(_replay(P, laws, actions, outcomes), belief[:, 0])


def _regrets(agent_of: object, world: object) -> np.ndarray:
    return simulate(world, agent_of, progress=False).regret  # type: ignore[arg-type]


def test_the_filter_that_knows_the_model_beats_sl_ec_early_and_sl_ec_records_its_run() -> None:
    world = SwitchingLatent.build(SwitchingLatentParams(horizon=600), np.arange(30))
    model, problem = world.offline_model, world.problem
    sl_ec = SwitchingLatentExploreCommit(
        SLECParams(exploration=320), problem, model, BatchRNG(range(30))
    )
    mts = ModelThompsonSampling(MTSParams(), problem, model, BatchRNG(range(30)))
    trace = simulate(world, sl_ec, progress=False)
    difference = trace.regret[:, :320].sum(axis=1) - _regrets(mts, world)[:, :320].sum(axis=1)
    assert difference.mean() > 3 * difference.std(ddof=1) / np.sqrt(30)
    summary = trace.summary
    assert (summary["exploration"] == 320).all() and (summary["explored_arms"] == 4).all()
    assert (summary["transition_error"] > 0).all() and (summary["transition_error"] <= 6).all()
    assert np.isnan(sl_ec.estimate).sum() == 0


def test_an_exploration_of_the_whole_run_estimates_p_from_all_of_it() -> None:
    world = SwitchingLatent.build(SwitchingLatentParams(horizon=200), np.arange(3))
    model, problem = world.offline_model, world.problem
    sl_ec = SwitchingLatentExploreCommit(
        SLECParams(exploration=10**6), problem, model, BatchRNG(range(3))
    )
    trace = simulate(world, sl_ec, progress=False)
    assert (trace.summary["exploration"] == 200).all()
    for r in range(3):
        outcomes = problem.reward_model.outcome(trace.reward[r])  # type: ignore[union-attr]
        laws = model.emissions[r]  # type: ignore[index]
        P_hat = estimate_transitions(laws, np.arange(4), trace.action[r], outcomes)
        error = np.abs(P_hat - model.transitions[r]).sum()
        assert trace.summary["transition_error"][r] == pytest.approx(error, rel=1e-12)


def test_sl_ec_is_refused_without_known_outcome_laws() -> None:
    world = Synthetic.build(SyntheticParams(horizon=10), np.arange(2))
    with pytest.raises(ValueError, match="sl_ec needs known outcome laws"):
        SwitchingLatentExploreCommit(
            SLECParams(), world.problem, world.offline_model, BatchRNG([0, 1])
        )


def test_nslb_refuses_sl_ec_where_no_outcome_laws_are_given_in_one_line(tmp_path: Path) -> None:
    done = nslb("run", "agent=sl_ec", cwd=tmp_path)
    assert done.returncode != 0
    assert said(done.stderr) == [
        "nslb: error: agent: sl_ec needs known outcome laws, which env=synthetic does not give: "
        "use env=switching_latent or env=movielens_genres"
    ]


def test_the_warm_up_plays_sl_ec_where_outcome_laws_are_known_and_skips_the_rest() -> None:
    assert warm_up(lambda line: None, ["sl_ec"]) == (1, True)
