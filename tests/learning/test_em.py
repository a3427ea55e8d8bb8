"""Baum–Welch for latent bandit models (``nslb_cli.learning.em``): the E-step against brute
force over every latent path, the M-steps against their closed forms, the log-likelihood's
climb, the error's ``1/sqrt(n)`` rate, and a fit's file."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from nslb_cli.learning import Counts, Fit, Logs, Parameters, estimation_errors, fit
from nslb_cli.learning.em import _Model


def hmm_logs(
    rng: np.random.Generator, parameters: Parameters, sequences: int, length: int, kind: str
) -> Logs:
    """Logs drawn from ``parameters`` under uniform logging."""
    S, K = (
        parameters.transitions.shape[0],
        2 if parameters.means is None else parameters.means.shape[1],
    )
    if parameters.outcomes is not None:
        K = parameters.outcomes.shape[1]
    state = rng.choice(S, size=sequences, p=parameters.initial)
    arms = rng.integers(K, size=(sequences, length))
    rewards = np.empty((sequences, length))
    for t in range(length):
        if t:
            cumulative = np.cumsum(parameters.transitions[state], axis=1)
            state = (rng.random(sequences)[:, None] > cumulative).sum(axis=1)
        a = arms[:, t]
        if kind == "gaussian":
            assert parameters.means is not None and parameters.sigma is not None
            noise = parameters.sigma[state] * rng.standard_normal(sequences)
            rewards[:, t] = parameters.means[state, a] + noise
        elif kind == "bernoulli":
            assert parameters.means is not None
            rewards[:, t] = rng.random(sequences) < parameters.means[state, a]
        else:
            assert parameters.outcomes is not None
            cumulative = np.cumsum(parameters.outcomes[state, a], axis=1)
            rewards[:, t] = (rng.random(sequences)[:, None] > cumulative).sum(axis=1)
    return Logs(arms, rewards, np.full(sequences, length))


STICKY = np.array([[0.9, 0.1], [0.2, 0.8]])
TRUE = {
    "gaussian": Parameters(
        np.array([0.3, 0.7]), STICKY, means=np.array([[0.1, 0.8, 0.5], [0.9, 0.2, 0.4]]),
        sigma=np.array([0.3, 0.5]),
    ),
    "bernoulli": Parameters(
        np.array([0.3, 0.7]), STICKY, means=np.array([[0.1, 0.8, 0.5], [0.9, 0.2, 0.4]])
    ),
    "categorical": Parameters(
        np.array([0.3, 0.7]), STICKY,
        outcomes=np.array([[[0.7, 0.2, 0.1], [0.1, 0.1, 0.8]], [[0.2, 0.6, 0.2], [0.5, 0.4, 0.1]]]),
    ),
}  # fmt: skip
N_ARMS = {"gaussian": 3, "bernoulli": 3, "categorical": 2}
N_OUTCOMES = {"gaussian": 1, "bernoulli": 2, "categorical": 3}


def model(logs: Logs, kind: str, shared: bool = False) -> _Model:
    return _Model(logs, 2, N_ARMS[kind], kind, N_OUTCOMES[kind], shared)


@pytest.mark.parametrize("kind", list(TRUE))
def test_the_e_step_is_the_sum_over_every_latent_path(kind: str) -> None:
    """Log-likelihood, ``E[#S_1 = s]``, ``E[#s -> s']`` and ``E[pulls]`` of two short
    sequences equal their definitions summed over all ``2^5`` paths of each."""
    logs = hmm_logs(np.random.default_rng(1), TRUE[kind], 2, 5, kind)
    theta = TRUE[kind]
    log_b = np.exp(_log_emission(theta, logs, kind))  # (M, T, S)
    total, first, moves, pulls = 0.0, np.zeros(2), np.zeros((2, 2)), np.zeros((2, N_ARMS[kind]))
    for m in range(2):
        weights = {}
        for path in itertools.product(range(2), repeat=5):
            p = theta.initial[path[0]] * np.prod([log_b[m, t, s] for t, s in enumerate(path)])
            p *= np.prod([theta.transitions[i, j] for i, j in itertools.pairwise(path)])
            weights[path] = p
        evidence = sum(weights.values())
        total += np.log(evidence)
        for path, p in weights.items():
            first[path[0]] += p / evidence
            for i, j in itertools.pairwise(path):
                moves[i, j] += p / evidence
            for t, s in enumerate(path):
                pulls[s, logs.arms[m, t]] += p / evidence
    found, counts = model(logs, kind).e_step(theta)
    assert found == pytest.approx(total, rel=1e-12)
    np.testing.assert_allclose(counts.initial, first, rtol=1e-10)
    np.testing.assert_allclose(counts.transitions, moves, rtol=1e-10)
    np.testing.assert_allclose(counts.pulls, pulls, rtol=1e-10)


def _log_emission(theta: Parameters, logs: Logs, kind: str) -> np.ndarray:
    """``log p(r_t | s, a_t)``, ``(M, T, S)``, written out for the brute force."""
    a, r = logs.arms, logs.rewards
    out = np.empty((*a.shape, 2))
    for s in range(2):
        if kind == "gaussian":
            assert theta.means is not None and theta.sigma is not None
            z = (r - theta.means[s, a]) / theta.sigma[s]
            out[..., s] = -0.5 * z**2 - np.log(theta.sigma[s] * np.sqrt(2 * np.pi))
        elif kind == "bernoulli":
            assert theta.means is not None
            out[..., s] = np.log(np.where(r == 1, theta.means[s, a], 1 - theta.means[s, a]))
        else:
            assert theta.outcomes is not None
            out[..., s] = np.log(theta.outcomes[s, a, r.astype(int)])
    return out


def test_the_m_steps_are_the_closed_forms_of_exact_counts() -> None:
    """Counts of a fully observed path: transitions, Bernoulli means and categorical laws
    are the frequencies; Gaussian means and per-state variances the sample moments."""
    moves = np.array([[6.0, 2.0], [1.0, 3.0]])
    pulls = np.array([[4.0, 5.0], [2.0, 8.0]])
    sums = np.array([[1.0, 4.0], [2.0, 3.0]])
    squares = np.array([[3.0, 6.0], [2.5, 4.0]])
    outcomes = np.stack([pulls - sums, sums], axis=-1)  # Bernoulli: misses and hits
    counts = Counts(np.array([3.0, 1.0]), moves, pulls, sums, squares, outcomes)
    logs = Logs(np.zeros((1, 2), dtype=np.int64), np.zeros((1, 2)), np.array([2]))
    start = Parameters(np.full(2, 0.5), np.full((2, 2), 0.5), np.zeros((2, 2)), np.ones(2))
    found = _Model(logs, 2, 2, "bernoulli", 2, True).m_step(counts, start)
    np.testing.assert_allclose(found.transitions, [[6 / 8, 2 / 8], [1 / 4, 3 / 4]])
    np.testing.assert_allclose(found.initial, [0.75, 0.25])
    np.testing.assert_allclose(found.means, sums / pulls)  # type: ignore[arg-type]
    laws = _Model(logs, 2, 2, "categorical", 2, True).m_step(
        counts, Parameters(start.initial, start.transitions, outcomes=np.full((2, 2, 2), 0.5))
    )
    np.testing.assert_allclose(laws.outcomes, outcomes / pulls[..., None])  # type: ignore[arg-type]
    gauss = _Model(logs, 2, 2, "gaussian", 1, False).m_step(counts, start)
    mean = sums / pulls
    var = (squares - pulls * mean**2).sum(axis=1) / pulls.sum(axis=1)
    np.testing.assert_allclose(gauss.sigma, np.sqrt(var))  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", list(TRUE))
def test_the_log_likelihood_never_decreases(kind: str) -> None:
    logs = hmm_logs(np.random.default_rng(2), TRUE[kind], 20, 50, kind)
    found = fit(logs, 2, N_ARMS[kind], kind, n_outcomes=N_OUTCOMES[kind], restarts=2,
                tolerance=-np.inf, max_iterations=40, shared_noise=False)  # fmt: skip
    assert found.iterations == 40 and len(found.log_likelihood) == 41
    assert np.diff(found.log_likelihood).min() >= -1e-9 * abs(found.log_likelihood[-1])


def test_the_estimation_error_shrinks_as_one_over_the_root_of_the_logged_rounds() -> None:
    """Root mean square errors of mu and P over 12 replications at n and 16 n rounds, from
    the truth: their ratio is 4 (the MLE's rate) within two standard errors (delta method
    on the log of the ratio of means)."""
    theta = TRUE["gaussian"]
    errors: dict[int, list[list[float]]] = {5: [], 80: []}
    for replication in range(12):
        for sequences in errors:
            rng = np.random.default_rng([replication, sequences])
            logs = hmm_logs(rng, theta, sequences, 100, "gaussian")
            found = fit(logs, 2, 3, start=theta, shared_noise=False)
            err = estimation_errors(found.parameters, theta.means, theta.transitions)  # type: ignore[arg-type]
            errors[sequences].append([err["mean_error"], err["transition_error"]])
    small, large = np.array(errors[5]), np.array(errors[80])
    ratio = small.mean(axis=0) / large.mean(axis=0)
    relative_se = np.sqrt(
        (small.std(axis=0, ddof=1) / small.mean(axis=0)) ** 2
        + (large.std(axis=0, ddof=1) / large.mean(axis=0)) ** 2
    ) / np.sqrt(12)
    assert np.all(np.abs(np.log(ratio / 4.0)) < 2 * relative_se), (ratio, relative_se)


def test_a_fit_is_a_plain_file_and_back() -> None:
    logs = hmm_logs(np.random.default_rng(3), TRUE["categorical"], 10, 30, "categorical")
    found = fit(logs, 2, 2, "categorical", n_outcomes=3, restarts=2)
    again = Fit.from_dict(json.loads(json.dumps(found.to_dict())))
    assert again.emission == "categorical" and again.iterations == found.iterations
    assert again.parameters.means is None and again.counts.outcomes.shape == (2, 2, 3)
    np.testing.assert_array_equal(again.parameters.outcomes, found.parameters.outcomes)
    np.testing.assert_array_equal(again.log_likelihood, found.log_likelihood)


def test_restarts_keep_the_best_and_the_fit_does_not_depend_on_the_chunks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    logs = hmm_logs(np.random.default_rng(4), TRUE["gaussian"], 40, 50, "gaussian")
    found = fit(logs, 2, 3, restarts=4, seed=7)
    single = [fit(logs, 2, 3, restarts=1, seed=7)]
    assert found.restarts == 4
    assert found.log_likelihood[-1] >= single[0].log_likelihood[-1] - 1e-9
    monkeypatch.setattr("nslb_cli.learning.em.CHUNK", 100)  # 20 chunks, not one
    chunked = fit(logs, 2, 3, restarts=4, seed=7)
    np.testing.assert_allclose(chunked.parameters.means, found.parameters.means, rtol=1e-12)  # type: ignore[arg-type]


def test_a_fit_that_goes_on_from_a_converged_one_says_so_in_plain_types() -> None:
    """The best restart going on alone may converge at once: ``converged`` is still Python's
    ``bool`` (a run's data.json is written with ``json``)."""
    logs = hmm_logs(np.random.default_rng(5), TRUE["gaussian"], 20, 50, "gaussian")
    done = fit(logs, 2, 3, restarts=1)
    again = model(logs, "gaussian", shared=True).climb(done, 1e-6, 400)
    assert again.converged is True and again.iterations == done.iterations + 1
