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
ALPHAS = (0.3, 1.0, 1.5, 2.0, 5.0, 796.0)
SHAPES = (0.3, 1.0, 1.99, 2.0, 60.0)
MIXED = np.tile(SHAPES, (SEEDS, ENTRIES // len(SHAPES)))
VARIED = np.random.default_rng(8).uniform(0.5, 3.0, (SEEDS, ENTRIES))


def draws(*batches: tuple[np.ndarray, int]) -> list[np.ndarray]:
    """Gamma draws ``(seeds, *alpha.shape[1:])`` of each ``(alpha, seeds)``, seed ``k`` from
    ``jax.random.key(k)``, in one process apart."""

    def compute() -> list[np.ndarray]:
        import jax

        from nslb_cli.jax_engine.numerics import gamma

        with jax.enable_x64(True):
            draw = jax.jit(jax.vmap(gamma))
            return [
                np.asarray(draw(jax.vmap(jax.random.key)(np.arange(seeds)), alpha[:seeds]))
                for alpha, seeds in batches
            ]

    result: list[np.ndarray] = run_apart(compute, "the JAX engine")
    return result


@pytest.fixture(scope="module")
def drawn() -> dict[object, np.ndarray]:
    """Every draw of the module at once: each process apart starts and compiles JAX anew."""
    batches = {
        **{alpha: (np.full((SEEDS, ENTRIES), alpha), SEEDS) for alpha in ALPHAS},
        "mixed": (MIXED, SEEDS),
        "alone": (VARIED, 1),
        "in a batch": (VARIED, 50),
    }
    return dict(zip(batches, draws(*batches.values()), strict=True))


@pytest.mark.parametrize(
    "alpha",  # slow: shapes between the extremes, which the next test draws side by side
    [pytest.param(a, marks=() if a in (0.3, 796.0) else pytest.mark.slow) for a in ALPHAS],
)
def test_gamma_draws_follow_the_gamma_law(drawn: dict[object, np.ndarray], alpha: float) -> None:
    x = drawn[alpha].ravel()
    assert stats.kstest(x, stats.gamma(alpha).cdf).pvalue > 1e-3
    assert abs(x.mean() - alpha) < 4 * np.sqrt(alpha / x.size)


def test_each_entry_follows_its_own_shape(drawn: dict[object, np.ndarray]) -> None:
    """Shapes on both sides of the boost (those below 2 are drawn from a shape one larger)
    side by side, as umTS's Dirichlet counts are (many entries go to the later rounds):
    each follows its own law."""
    alpha = MIXED
    for shape in SHAPES:
        mine = drawn["mixed"][alpha == shape]
        assert stats.kstest(mine, stats.gamma(shape).cdf).pvalue > 1e-3
        assert abs(mine.mean() - shape) < 4 * np.sqrt(shape / mine.size)


def test_a_seeds_draws_are_the_same_alone_and_in_a_batch(drawn: dict[object, np.ndarray]) -> None:
    np.testing.assert_array_equal(drawn["alone"][0], drawn["in a batch"][0])
