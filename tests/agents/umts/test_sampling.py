"""The compiled draw helpers of umTS's kernels against numpy's own samplers."""

from __future__ import annotations

import numba
import numpy as np
import pytest

from nslb_cli.agents.umts.sampling import standard_gamma


@numba.njit
def gammas(generator: np.random.Generator, shapes: np.ndarray) -> np.ndarray:
    out = np.empty(len(shapes))
    for i in range(len(shapes)):
        out[i] = standard_gamma(generator, shapes[i])
    return out


@pytest.mark.parametrize("shape", [0.4, 1.0, 1.0 + 1e-9, 1.5, 3.0, 796.0, 1e6])
def test_standard_gamma_draws_numpys_numbers(shape: float) -> None:
    """Bit for bit numpy's ``standard_gamma``: same algorithm, same stream (so umTS's
    results did not change when the helper replaced the library call)."""
    ours = gammas(np.random.default_rng(11), np.full(5000, shape))
    np.testing.assert_array_equal(ours, np.random.default_rng(11).standard_gamma(shape, 5000))


def test_standard_gamma_with_mixed_shapes_leaves_the_stream_where_numpy_does() -> None:
    shapes = np.random.default_rng(0).choice([0.7, 1.0, 2.5, 800.0], 3000)
    generator, reference = np.random.default_rng(5), np.random.default_rng(5)
    ours = gammas(generator, shapes)
    np.testing.assert_array_equal(ours, [reference.standard_gamma(a) for a in shapes])
    assert generator.random() == reference.random(), "both streams consumed the same draws"
