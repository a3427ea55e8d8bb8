"""The compiled draw helpers of umTS's kernels against numpy's own samplers."""

from __future__ import annotations

import numpy as np
import pytest

from nslb_cli.agents.umts.sampling import normalise, standard_gammas


@pytest.mark.parametrize("shape", [0.4, 1.0, 1.0 + 1e-9, 1.5, 3.0, 796.0, 1e6])
def test_standard_gammas_draw_numpys_numbers(shape: float) -> None:
    """Bit for bit numpy's ``standard_gamma``: same algorithm, same stream (so umTS's
    results did not change when the loop replaced the library call)."""
    ours = np.full((100, 50), shape)
    standard_gammas(np.random.default_rng(11), ours)
    expected = np.random.default_rng(11).standard_gamma(shape, 5000).reshape(100, 50)
    np.testing.assert_array_equal(ours, expected)


def test_standard_gammas_with_mixed_shapes_leave_the_stream_where_numpy_does() -> None:
    """Row by row, entry by entry: the order of numpy's draws for each shape in turn."""
    shapes = np.random.default_rng(1).choice([0.7, 1.0, 2.5, 800.0], (300, 5))
    generator, reference = np.random.default_rng(5), np.random.default_rng(5)
    ours = shapes.copy()
    standard_gammas(generator, ours)
    np.testing.assert_array_equal(
        ours, [[reference.standard_gamma(a) for a in row] for row in shapes]
    )
    assert generator.random() == reference.random(), "both streams consumed the same draws"


def test_normalise_writes_the_runs_row_and_returns_its_largest_log_weight() -> None:
    log_weights = np.log(np.array([[1.0, 3.0, 4.0], [2.0, 2.0, 4.0]]))
    out = np.full((2, 3), -1.0)
    assert normalise(log_weights, 1, out) == np.log(4.0)
    np.testing.assert_array_equal(out[0], -1.0)
    np.testing.assert_allclose(out[1], [0.25, 0.25, 0.5])
