"""nslb's Gaussian EM (``nslb_cli.learning``) against Dynamax's ``LinearRegressionHMM.fit_em``
(``make validate``).

The arm is the input and the reward the emission. Dynamax's regression has a bias, so the
arms are coded with ``K - 1`` indicator columns: ``mu(a, s) = b_s + W_s[a]`` for ``a < K - 1``
and ``mu(K - 1, s) = b_s``, the same model reparametrised. Its Dirichlet priors on ``pi`` and
on each row of ``P`` are made flat (concentration 1), so its M-step is the maximum-likelihood
one and its log-probability is the log-likelihood plus the flat priors' constant
``(S + 1) log Gamma(S)``. Both start from the same parameters and run the same iterations;
every iteration's log-likelihood and the final parameters must agree. Dynamax keeps one
noise variance per state: nslb's ``shared_noise=False``.

Dynamax runs in a child process (``run_apart``), as in ``test_hmm_filters``.
"""

from __future__ import annotations

from math import lgamma
from typing import Any

import numpy as np
import pytest

pytest.importorskip("dynamax")

from nslb_cli.common.apart import run_apart  # noqa: E402
from nslb_cli.learning import Logs, Parameters, fit  # noqa: E402
from tests.learning.test_em import hmm_logs  # noqa: E402

S, K, ITERATIONS = 3, 4, 25


def dynamax_em(start: Parameters, logs: Logs) -> dict[str, Any]:
    """Dynamax's ``fit_em`` from ``start``: its log-probabilities and final parameters."""
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    from dynamax.hidden_markov_model import LinearRegressionHMM

    assert start.means is not None and start.sigma is not None
    inputs = np.eye(K)[logs.arms][..., : K - 1]  # (M, T, K - 1)
    hmm = LinearRegressionHMM(
        S, K - 1, 1, initial_probs_concentration=1.0, transition_matrix_concentration=1.0
    )
    params, props = hmm.initialize(
        initial_probs=jnp.asarray(start.initial),
        transition_matrix=jnp.asarray(start.transitions),
        emission_weights=jnp.asarray(start.means[:, None, : K - 1] - start.means[:, None, K - 1 :]),
        emission_biases=jnp.asarray(start.means[:, K - 1 :]),
        emission_covariances=jnp.asarray(start.sigma[:, None, None] ** 2),
    )
    found, log_probs = hmm.fit_em(
        params, props, jnp.asarray(logs.rewards[..., None]), inputs=jnp.asarray(inputs),
        num_iters=ITERATIONS, verbose=False,
    )  # fmt: skip
    weights = np.asarray(found.emissions.weights)[:, 0, :]
    biases = np.asarray(found.emissions.biases)[:, 0]
    return {
        "log_probs": np.asarray(log_probs),
        "means": np.concatenate([weights + biases[:, None], biases[:, None]], axis=1),
        "sigma": np.sqrt(np.asarray(found.emissions.covs)[:, 0, 0]),
        "transitions": np.asarray(found.transitions.transition_matrix),
        "initial": np.asarray(found.initial.probs),
    }


def test_gaussian_em_matches_dynamax_iteration_by_iteration() -> None:
    rng = np.random.default_rng(11)
    truth = Parameters(
        np.full(S, 1 / S),
        0.8 * np.eye(S) + 0.2 * rng.dirichlet(np.ones(S), size=S),
        means=rng.uniform(size=(S, K)),
        sigma=np.array([0.2, 0.3, 0.4]),
    )
    logs = hmm_logs(rng, truth, 30, 80, "gaussian")
    start = Parameters(
        np.full(S, 1 / S),
        0.5 * np.eye(S) + 0.5 * rng.dirichlet(np.ones(S), size=S),
        means=rng.uniform(size=(S, K)),
        sigma=np.full(S, 0.5),
    )
    ours = fit(logs, S, K, start=start, shared_noise=False, tolerance=-np.inf,
               max_iterations=ITERATIONS)  # fmt: skip
    theirs = run_apart(lambda: dynamax_em(start, logs), "Dynamax")
    flat_priors = (S + 1) * lgamma(S)
    np.testing.assert_allclose(
        ours.log_likelihood[:ITERATIONS] + flat_priors, theirs["log_probs"], rtol=1e-6
    )
    for name in ("means", "sigma", "transitions", "initial"):
        np.testing.assert_allclose(getattr(ours.parameters, name), theirs[name], rtol=1e-6)
