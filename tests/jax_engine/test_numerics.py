"""The JAX engine's gamma draws (Marsaglia & Tsang on whole arrays, the few rejected entries
gathered into small rounds) against the gamma law as scipy computes it, and a seed's draws
alone and inside a batch."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

pytest.importorskip("jax")

from nslb_cli.common.apart import run_apart  # noqa: E402

SEEDS, ENTRIES = 400, 500  # umTS's shape: a seed's particles x states per round


def draws(alpha: np.ndarray, seeds: int = SEEDS) -> np.ndarray:
    """Gamma draws ``(seeds, *alpha.shape[1:])``, seed ``k`` from ``jax.random.key(k)``."""

    def compute() -> np.ndarray:
        import jax

        from nslb_cli.jax_engine.numerics import gamma

        with jax.enable_x64(True):
            keys = jax.vmap(jax.random.key)(np.arange(seeds))
            return np.asarray(jax.jit(jax.vmap(gamma))(keys, alpha[:seeds]))

    result: np.ndarray = run_apart(compute, "the JAX engine")
    return result


@pytest.mark.parametrize(
    "alpha",  # slow: shapes between the extremes, which the next test draws side by side
    [0.3, *(pytest.param(a, marks=pytest.mark.slow) for a in (1.0, 1.5, 2.0, 5.0)), 796.0],
)
def test_gamma_draws_follow_the_gamma_law(alpha: float) -> None:
    x = draws(np.full((SEEDS, ENTRIES), alpha)).ravel()
    assert stats.kstest(x, stats.gamma(alpha).cdf).pvalue > 1e-3
    assert abs(x.mean() - alpha) < 4 * np.sqrt(alpha / x.size)


def test_each_entry_follows_its_own_shape() -> None:
    """Shapes on both sides of the boost (those below 2 are drawn from a shape one larger)
    side by side, as umTS's Dirichlet counts are (many entries go to the later rounds):
    each follows its own law."""
    shapes = (0.3, 1.0, 1.99, 2.0, 60.0)
    alpha = np.tile(shapes, (SEEDS, ENTRIES // len(shapes)))
    x = draws(alpha)
    for shape in shapes:
        mine = x[alpha == shape]
        assert stats.kstest(mine, stats.gamma(shape).cdf).pvalue > 1e-3
        assert abs(mine.mean() - shape) < 4 * np.sqrt(shape / mine.size)


def test_a_seeds_draws_are_the_same_alone_and_in_a_batch() -> None:
    alpha = np.random.default_rng(8).uniform(0.5, 3.0, (SEEDS, ENTRIES))
    np.testing.assert_array_equal(draws(alpha, 1)[0], draws(alpha, 50)[0])
