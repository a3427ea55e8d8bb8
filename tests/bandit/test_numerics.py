"""numerics.pairwise_sum_rows against numpy's own sums along a contiguous row."""

from __future__ import annotations

import numpy as np

from nslb_cli.bandit.numerics import pairwise_sum_rows


def test_summing_the_first_axis_gives_numpys_row_sums_to_the_last_bit() -> None:
    rng = np.random.default_rng(0)
    for n in range(1, 300):
        # magnitudes over 16 orders: any other order of the additions shows in the last bits
        x = rng.standard_exponential((50, n)) * 10.0 ** rng.integers(-8, 8, (50, n))
        np.testing.assert_array_equal(pairwise_sum_rows(np.ascontiguousarray(x.T)), x.sum(axis=1))


def test_the_order_matters_so_the_test_above_can_fail() -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_exponential((50, 40)) * 10.0 ** rng.integers(-8, 8, (50, 40))
    assert not np.array_equal(np.ascontiguousarray(x.T).sum(axis=0), x.sum(axis=1))
