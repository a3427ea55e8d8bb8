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


def worlds(*batches: np.ndarray) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """For each batch of seeds, drawn together as the engine draws them: their true
    transitions, true means and prior means."""

    def compute() -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        import jax

        from nslb_cli.jax_engine.engine import world_of
        from nslb_cli.jax_engine.scan import pinned_numbers

        spec = world_of(ENV)
        key = lambda s: jax.random.key(s, impl="threefry2x32")  # noqa: E731
        draw = jax.jit(jax.vmap(lambda s: spec.draw(key(s))))
        with pinned_numbers():
            drawn = [draw(seeds) for seeds in batches]
            return [(np.asarray(d.true_transitions), np.asarray(d.true_means),
                     np.asarray(d.model.means)) for d in drawn]  # fmt: skip

    result: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = run_apart(compute, "JAX")
    return result


def test_a_prior_worlds_true_parameters_follow_their_priors() -> None:
    [(phi, truth, prior)] = worlds(np.arange(SEEDS))
    S = ENV.n_states
    alpha = np.where(np.eye(S, dtype=bool), ENV.stay_concentration, ENV.move_concentration)
    total = alpha.sum(axis=1, keepdims=True)
    mean, var = alpha / total, alpha * (total - alpha) / (total**2 * (total + 1))
    assert np.allclose(phi.sum(axis=2), 1.0) and (phi > 0).all()
    assert np.all(np.abs(phi.mean(axis=0) - mean) < 4 * np.sqrt(var / SEEDS))
    spread = (phi - phi.mean(axis=0)) ** 2
    assert np.all(np.abs(spread.mean(axis=0) - var) < 4 * spread.std(axis=0) / np.sqrt(SEEDS))
    c = ENV.prior_strength
    assert ((truth >= 0) & (truth <= 1)).all()  # tiny shapes c m underflow to 0 or 1
    # bounded residuals (a standardised one has a heavy tail where m nears 0 or 1)
    gap = truth - prior  # mean 0
    excess = gap**2 - prior * (1 - prior) / (c + 1)  # mean 0: Beta's variance
    for residual in (gap, excess):
        assert abs(residual.mean()) < 4 * residual.std() / np.sqrt(residual.size)


@pytest.mark.slow  # the JAX engine's machinery on a CPU: make test-full
def test_a_seeds_world_is_the_same_alone_and_in_any_batch() -> None:
    """Bit for bit: its draws come from its own key (Bernoulli means and Dirichlet rows)."""
    batch, pair = worlds(np.array([2, 7, 11, 30]), np.array([7, 7]))
    for in_batch, in_pair in zip(batch, pair, strict=True):
        np.testing.assert_array_equal(in_batch[1], in_pair[0])
