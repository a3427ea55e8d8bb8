"""env.model=learned on env=synthetic and env=switching_latent: the online world is the known
model's, the agents' model is EM's fit of logs of it, and the fit's statistics reach
``seed=K.json``."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from nslb_cli.agents.mts import MTSParams
from nslb_cli.bandit.problem import Sizes
from nslb_cli.bandit.rewards import Gaussian
from nslb_cli.common.errors import ConfigError
from nslb_cli.envs.learned import SUMMARY, Logging, draw_logs
from nslb_cli.envs.switching_latent import SwitchingLatent, SwitchingLatentParams
from nslb_cli.envs.synthetic import Synthetic, SyntheticParams
from nslb_cli.jax_engine import coverage
from tests.helpers.cli import QUICK, nslb

SMALL = {"n_states": 3, "n_arms": 3, "horizon": 50}


def _rms(x: np.ndarray) -> float:
    return float(np.sqrt(np.mean(x**2)))


@pytest.mark.parametrize(
    ("env", "params"),
    [
        (Synthetic, SyntheticParams(horizon=300)),
        (Synthetic, SyntheticParams(horizon=300, reward="bernoulli")),
        (SwitchingLatent, SwitchingLatentParams(horizon=300)),
    ],
)
def test_the_online_world_of_a_learned_model_is_the_known_models(env: type, params: object) -> None:
    seeds = np.arange(3)
    known = env.build(params, seeds)
    fitted = {**vars(params), "model": "learned", "offline_rounds": 2000}
    learned = env.build(type(params)(**fitted), seeds)
    for name in ("states", "mean_rewards", "noise", "emissions"):
        assert np.array_equal(getattr(learned, name), getattr(known, name)), name
    assert not np.array_equal(learned.offline_model.means, known.offline_model.means)
    assert known.summary == {} and sorted(learned.summary) == sorted(SUMMARY)


def test_the_logs_are_sequences_of_the_true_chain_under_uniform_arms() -> None:
    """2,050 rounds in sequences of 100: 20 whole ones and one of 50, padded with arm 0 and
    reward 0. Arms uniform over K = 4 (each count within 4 standard errors of n / 4); a chain
    that never leaves its state logs each sequence from one state, its arms' means exactly."""
    means = np.array([[0.1, 0.2, 0.3, 0.4], [0.6, 0.7, 0.8, 0.9]])
    logging = Logging(rounds=2050, sequence=100, restarts=1)
    logs = draw_logs(np.eye(2), means, Gaussian(0.0), logging, np.random.default_rng(3))
    assert logs.arms.shape == (21, 100) and logs.lengths.tolist() == [100] * 20 + [50]
    assert (logs.arms[-1, 50:] == 0).all() and (logs.rewards[-1, 50:] == 0).all()
    kept = np.arange(100) < logs.lengths[:, None]
    counts = np.bincount(logs.arms[kept], minlength=4)
    assert np.abs(counts - 2050 / 4).max() < 4 * np.sqrt(2050 * 0.25 * 0.75)
    states = (logs.rewards[:, 0] - means[0, logs.arms[:, 0]] > 0.25).astype(int)
    assert np.array_equal(logs.rewards[kept], means[np.repeat(states, logs.lengths),
                                                    logs.arms[kept]])  # fmt: skip


def test_a_seeds_learned_model_is_the_same_alone_and_in_a_batch() -> None:
    p = SwitchingLatentParams(model="learned", horizon=50, offline_rounds=500)
    batch, alone = SwitchingLatent.build(p, np.arange(3)), SwitchingLatent.build(p, [2])
    part = batch.part(slice(2, 3))
    for world in (alone, part):
        assert np.array_equal(world.offline_model.emissions, batch.offline_model.emissions[2:])
        assert np.array_equal(world.offline_model.transitions, batch.offline_model.transitions[2:])
        assert world.summary == {k: v[2:] for k, v in batch.summary.items()}


def test_the_learned_gaussian_model_nears_the_truth_as_the_logs_grow() -> None:
    """S = K = 3, sigma = 0.5, switch probability 0.005, one seed. Under the uniform logging
    policy each state holds about a third of the n rounds and each arm a third of those, so
    EM with the states well told apart estimates mu(a, s) from n_sa = n / 9 pulls, standard
    error sigma / sqrt(n_sa) (0.0047 at n = 10^5), and a row of P from n_s = n / 3 moves,
    standard error sqrt(p (1 - p) / n_s) (at most 3.9e-4). The RMS of independent errors
    is their standard error; 4 standard errors bound it. The posterior sd of a mean is
    sigma / sqrt(n_sa + 1): within 10 % of that standard error, and on average about
    sqrt(1000) = 32 times larger at n = 10^2, where the errors exceed the bound too."""
    truth = Synthetic.build(SyntheticParams(**SMALL), [0]).offline_model
    many = Synthetic.build(SyntheticParams(**SMALL, model="learned", offline_rounds=10**5), [0])
    few = Synthetic.build(SyntheticParams(**SMALL, model="learned", offline_rounds=10**2), [0])
    se_mean, se_row = 0.5 / np.sqrt(10**5 / 9), np.sqrt(0.005 * 0.995 / (10**5 / 3))
    model = many.offline_model
    assert _rms(model.means - truth.means) < 4 * se_mean
    assert _rms(model.transitions - truth.transitions) < 4 * se_row
    assert np.allclose(model.mean_sd, se_mean, rtol=0.1)
    assert many.summary["fit_mean_error"][0] < 4 * se_mean
    assert many.summary["fit_transition_error"][0] < 4 * se_row
    assert few.offline_model.mean_sd.mean() > 10 * model.mean_sd.max()
    assert _rms(few.offline_model.means - truth.means) > 4 * se_mean


def test_the_learned_outcome_laws_near_the_truth_and_give_the_means() -> None:
    """S = K = N = 3, one seed, 10^5 logged rounds: each O[s, a, o] is a frequency over
    about n_sa = n / 9 pulls, standard error sqrt(O (1 - O) / n_sa); the RMS error of O is
    within 4 times the RMS of those (the states are inferred, not seen, which a correct fit
    pays for with a little more). The means agents get are the expected outcome rewards."""
    sizes = {"n_states": 3, "n_arms": 3, "n_outcomes": 3, "horizon": 50}
    truth = SwitchingLatent.build(SwitchingLatentParams(**sizes), [0]).offline_model
    p = SwitchingLatentParams(**sizes, model="learned", offline_rounds=10**5)
    model = SwitchingLatent.build(p, [0]).offline_model
    assert truth.emissions is not None and model.emissions is not None
    se = _rms(np.sqrt(truth.emissions * (1 - truth.emissions) / (10**5 / 9)))
    assert _rms(model.emissions - truth.emissions) < 4 * se
    assert np.allclose(model.means, (model.emissions * np.linspace(0, 1, 3)).sum(axis=3))


def test_a_run_records_the_fit_of_each_seed(tmp_path: Path) -> None:
    done = nslb("run", "agent=mts", "env.model=learned", "env.offline_rounds=400",
                "run.n_seeds=2", *QUICK, cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    (folder,) = {p.parent for p in (tmp_path / "outputs").rglob("seed=1.json")}
    for seed in (0, 1):
        record = json.loads((folder / f"seed={seed}.json").read_text())
        assert all(np.isfinite(record[key]) for key in SUMMARY), record
        assert record["fit_restarts"] == 3 and isinstance(record["fit_iterations"], int)


def test_a_batch_holds_one_seeds_logs_at_a_time_and_declares_no_more() -> None:
    """The logs are made, fitted and dropped seed by seed: four seeds peak where one does,
    at least at the declared bytes (a lower bound), whatever the batch."""
    p = SyntheticParams(**SMALL, model="learned", offline_rounds=5000, offline_restarts=1)
    Synthetic.build(p, [9])  # compiled and imported before measuring
    peaks = []
    for seeds in ([0], [0, 1, 2, 3]):
        tracemalloc.start()
        Synthetic.build(p, seeds)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    declared = Synthetic.memory(p, Sizes(4, p.horizon, p.n_arms, p.n_states))
    assert declared == {"env.offline_rounds": 5000 * (2 + p.n_states) * 8}
    assert declared["env.offline_rounds"] <= peaks[0]
    assert peaks[1] < peaks[0] + declared["env.offline_rounds"] / 2


def test_the_jax_engine_refuses_a_learned_model_in_one_line() -> None:
    """EM runs on the host from the default engine's truths, which the JAX engine's are not."""
    refused = coverage.refusal(SyntheticParams(model="learned"), MTSParams())
    assert refused is not None and refused[0] == "env.model" and "numpy engine" in refused[1]
    assert coverage.refusal(SyntheticParams(model="prior"), MTSParams()) is None


@pytest.mark.parametrize(
    ("params", "field"),
    [
        (lambda: SyntheticParams(model="learned", dynamics="fixed"), "model"),
        (lambda: SyntheticParams(offline_rounds=0), "offline_rounds"),
        (lambda: SwitchingLatentParams(offline_sequence=0), "offline_sequence"),
        (lambda: SwitchingLatentParams(model="prior"), "model"),
    ],
)
def test_a_learned_model_refuses_what_it_cannot_learn_in_one_line(
    params: object, field: str
) -> None:
    with pytest.raises(ConfigError, match=f"^{field}: ") as refused:
        params()  # type: ignore[operator]
    assert "\n" not in str(refused.value)
