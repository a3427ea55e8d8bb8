"""env=switching_latent: the authors' draws, outcomes realised from O, common random numbers,
and the filters of mTS (exact) and umTS (particles) on categorical outcomes."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np

from nslb_cli.agents.mts import ModelThompsonSampling, MTSParams
from nslb_cli.agents.umts import UMTSParams, UncertainModelThompsonSampling
from nslb_cli.bandit.rewards import Categorical
from nslb_cli.bandit.rng import BatchRNG
from nslb_cli.envs.switching_latent import (
    SwitchingLatent,
    SwitchingLatentParams,
    draw_problem,
    read_problem,
)


def test_the_draws_follow_the_authors_construction() -> None:
    p = SwitchingLatentParams(n_states=3, n_arms=4, n_outcomes=5, min_transition_prob=0.3)
    P, laws = draw_problem(p, np.random.default_rng(1))
    assert np.allclose(P.sum(axis=1), 1) and (P >= 0.3 - 1e-12).all()
    assert np.allclose(laws.sum(axis=2), 1) and laws.shape == (3, 4, 5)
    # each state pairs K = 4 arms with 4 of the 5 outcomes (weight 20 on top of U(0, 1))
    assert ((laws > 0.5).sum(axis=(1, 2)) == 4).all()
    loose = SwitchingLatentParams(n_states=4, transition_multiplier=20.0)
    P, _ = draw_problem(loose, np.random.default_rng(2))
    assert (np.diag(P) > P.max(axis=1, initial=0, where=~np.eye(4, dtype=bool))).all()


def test_outcomes_follow_the_pulled_arms_law_in_the_true_state() -> None:
    p = SwitchingLatentParams(horizon=3000)
    world = SwitchingLatent.build(p, np.arange(40))
    laws, reward = world.emissions, world.problem.reward_model
    assert isinstance(reward, Categorical) and laws is not None
    arm = np.full(40, 2)
    outcomes = np.stack([reward.outcome(world.reward(t, arm)) for t in range(3000)], axis=1)
    pulled = laws[np.arange(40)[:, None], world.states, 2]  # (R, n, N)
    for o in range(5):
        expected = pulled[..., o].mean()
        se = np.sqrt(expected * (1 - expected) / outcomes.size)
        assert abs((outcomes == o).mean() - expected) < 4 * se
    means = (laws * np.linspace(0, 1, 5)).sum(axis=3)
    assert np.allclose(world.mean_rewards[3, 7], means[3, world.states[3, 7]])


def test_a_seeds_world_is_the_same_alone_and_in_a_batch() -> None:
    p = SwitchingLatentParams(horizon=300)
    batch, alone = SwitchingLatent.build(p, np.arange(5)), SwitchingLatent.build(p, [3])
    assert batch.emissions is not None and alone.emissions is not None
    for name in ("states", "noise", "mean_rewards", "emissions"):
        assert np.array_equal(getattr(batch, name)[3], getattr(alone, name)[0]), name
    actions = np.random.default_rng(0).integers(0, 4, (5, 300))
    assert np.array_equal(batch.realised(actions)[3], alone.realised(actions[3:4])[0])
    part = batch.part(slice(3, 4))
    assert np.array_equal(part.realised(actions[3:4]), alone.realised(actions[3:4]))


def test_bernoulli_outcomes_are_two_rewarded_zero_and_one() -> None:
    world = SwitchingLatent.build(SwitchingLatentParams(reward="bernoulli", horizon=50), [0])
    assert world.problem.reward_model == Categorical((0.0, 1.0))
    assert set(np.unique(world.realised(np.zeros((1, 50), dtype=np.int64)))) <= {0.0, 1.0}


def test_the_outcome_of_a_reward_is_found_whatever_the_order_of_the_values() -> None:
    model = Categorical((0.5, 0.0, 1.0, 0.25))
    assert np.array_equal(model.outcome(np.array([1.0, 0.0, 0.25, 0.5])), [2, 1, 3, 0])


def _forward(P: np.ndarray, laws: np.ndarray, arms: list[int], outs: list[int]) -> np.ndarray:
    """P(S_{t+1} | o_1..o_t) by summing over every path (brute force)."""
    S = len(P)
    joint = np.zeros(S)
    for path in itertools.product(range(S), repeat=len(arms) + 1):
        weight = 1.0 / S
        for t, (a, o) in enumerate(zip(arms, outs, strict=True)):
            weight *= laws[path[t], a, o] * P[path[t], path[t + 1]]
        joint[path[-1]] += weight
    return joint / joint.sum()


def _tiny(tmp_path: Path) -> SwitchingLatentParams:
    problem = {
        "transition_matrix": [[0.8, 0.2], [0.3, 0.7]],
        "state_action_reward_matrix": [[[0.7, 0.2, 0.1], [0.1, 0.1, 0.8]],
                                       [[0.1, 0.3, 0.6], [0.5, 0.4, 0.1]]],
        "possible_rewards": [1.0, 0.0, 0.5],
    }  # fmt: skip
    (tmp_path / "bandit_info.json").write_text(json.dumps(problem))
    return SwitchingLatentParams(problem=str(tmp_path / "bandit_info.json"), horizon=6)


def test_the_categorical_filter_of_mts_is_the_hmm_forward_pass(tmp_path: Path) -> None:
    p = _tiny(tmp_path)
    assert (p.n_states, p.n_arms, p.n_outcomes) == (2, 2, 3)
    world = SwitchingLatent.build(p, [0])
    agent = ModelThompsonSampling(MTSParams(), world.problem, world.offline_model, BatchRNG([0]))
    P, laws, r = read_problem(Path(p.problem or ""))
    arms, outs = [0, 1, 1, 0, 1], [2, 0, 1, 1, 2]
    for t, (a, o) in enumerate(zip(arms, outs, strict=True)):
        agent.update(t, None, np.array([a]), np.array([r[o]]))
        assert np.allclose(agent.predictive[0], _forward(P, laws, arms[: t + 1], outs[: t + 1]))


def test_umts_with_known_transitions_filters_like_mts(tmp_path: Path) -> None:
    p = _tiny(tmp_path)
    world = SwitchingLatent.build(p, [0])
    known = world.offline_model.__class__(**{**world.offline_model.__dict__, "concentration": None})
    umts = UncertainModelThompsonSampling(
        UMTSParams(num_particles=20000), world.problem, known, BatchRNG([1])
    )
    mts = ModelThompsonSampling(MTSParams(), world.problem, known, BatchRNG([1]))
    r = np.array([1.0, 0.0, 0.5])
    for t, (a, o) in enumerate([(0, 2), (1, 0), (1, 1), (0, 1)]):
        umts.act(t, None)
        umts.update(t, None, np.array([a]), np.array([r[o]]))
        mts.update(t, None, np.array([a]), np.array([r[o]]))
    se = np.sqrt(mts.predictive[0] * (1 - mts.predictive[0]) / 20000)
    assert (np.abs(umts.state_posterior()[0] - mts.predictive[0]) < 5 * se + 1e-3).all()


def test_the_authors_file_and_nslbs_names_give_one_problem(tmp_path: Path) -> None:
    P, laws, r = read_problem(Path(_tiny(tmp_path).problem or ""))
    ours = {"transitions": P.tolist(), "observations": laws.tolist(), "rewards": r.tolist()}
    (tmp_path / "ours.json").write_text(json.dumps(ours))
    again = read_problem(tmp_path / "ours.json")
    assert all(
        np.allclose(x, y, rtol=0, atol=1e-15) for x, y in zip((P, laws, r), again, strict=True)
    )
    without = {"transition_matrix": P.tolist(), "state_action_reward_matrix": laws.tolist()}
    (tmp_path / "estimation.json").write_text(json.dumps(without))
    assert np.array_equal(read_problem(tmp_path / "estimation.json")[2], [0.0, 0.5, 1.0])
