"""A prior world's true parameters in the JAX engine follow their priors (closed forms): each
true transition row ``~ Dir(alpha)`` and, with clicks, each true mean ``~ Beta(c m, c (1 - m))``
around its prior mean ``m``."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("jax")

from nslb_cli.common.apart import run_apart  # noqa: E402
from nslb_cli.envs.synthetic import SyntheticParams  # noqa: E402

SEEDS = 4000
ENV = SyntheticParams(model="prior", reward="bernoulli", stay_concentration=8.0,
                      move_concentration=2.0, prior_strength=3.0)  # fmt: skip


def worlds() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Seeds 0 … SEEDS-1: their true transitions, true means and prior means."""

    def compute() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        import jax

        from nslb_cli.jax_engine.engine import world_of

        spec = world_of(ENV)
        with jax.enable_x64(True):
            drawn = jax.jit(jax.vmap(lambda s: spec.draw(jax.random.key(s))))(np.arange(SEEDS))
            return (np.asarray(drawn.true_transitions), np.asarray(drawn.true_means),
                    np.asarray(drawn.model.means))  # fmt: skip

    result: tuple[np.ndarray, np.ndarray, np.ndarray] = run_apart(compute, "the JAX engine")
    return result


def test_a_prior_worlds_true_parameters_follow_their_priors() -> None:
    phi, truth, prior = worlds()
    S = ENV.n_states
    alpha = np.where(np.eye(S, dtype=bool), ENV.stay_concentration, ENV.move_concentration)
    total = alpha.sum(axis=1, keepdims=True)
    mean, var = alpha / total, alpha * (total - alpha) / (total**2 * (total + 1))
    assert np.allclose(phi.sum(axis=2), 1.0) and (phi > 0).all()
    assert np.all(np.abs(phi.mean(axis=0) - mean) < 4 * np.sqrt(var / SEEDS))
    spread = (phi - phi.mean(axis=0)) ** 2
    assert np.all(np.abs(spread.mean(axis=0) - var) < 4 * spread.std(axis=0) / np.sqrt(SEEDS))
    c = ENV.prior_strength
    z = (truth - prior) / np.sqrt(prior * (1 - prior) / (c + 1))  # mean 0, variance 1
    assert ((truth >= 0) & (truth <= 1)).all()  # tiny shapes c m underflow to 0 or 1
    assert abs(z.mean()) < 4 / np.sqrt(z.size)
    assert abs((z**2).mean() - 1) < 4 * (z**2).std() / np.sqrt(z.size)
