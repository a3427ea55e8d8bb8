"""The resampling schemes of umTS's particle filter (nslb_cli.agents.umts.resampling)."""

from __future__ import annotations

import numpy as np
import pytest

from nslb_cli.agents.umts.resampling import SCHEMES, draw_ancestors


def resample(weights: np.ndarray, scheme: str, rng: np.random.Generator) -> np.ndarray:
    ancestors = np.empty(len(weights), dtype=np.int64)
    draw_ancestors(weights, SCHEMES.index(scheme), rng, ancestors)
    return ancestors


@pytest.mark.parametrize("scheme", SCHEMES)
def test_resampling_is_unbiased(scheme: str) -> None:
    """E[#offspring of i] = N w_i: checked over 3000 draws within 4.5 SE per particle."""
    weights = np.random.default_rng(0).dirichlet(np.ones(8) * 0.7)
    rng = np.random.default_rng(1)
    draws = 3000
    counts = np.array(
        [np.bincount(resample(weights, scheme, rng), minlength=8) for _ in range(draws)]
    )
    se = counts.std(axis=0, ddof=1) / np.sqrt(draws)
    assert np.all(np.abs(counts.mean(axis=0) - 8 * weights) <= 4.5 * se + 1e-12)


def test_systematic_resampling_keeps_heavy_particles() -> None:
    """Systematic resampling gives particle i floor(N w_i) or ceil(N w_i) offspring."""
    weights = np.array([0.55, 0.3, 0.1, 0.05])
    rng = np.random.default_rng(3)
    for _ in range(200):
        counts = np.bincount(resample(weights, "systematic", rng), minlength=4)
        assert np.all(counts >= np.floor(4 * weights)) and np.all(counts <= np.ceil(4 * weights))


@pytest.mark.parametrize("scheme", SCHEMES)
def test_ancestors_are_arranged_for_copying_in_place(scheme: str) -> None:
    """Every particle with offspring is its own first offspring, so ``x[i] = x[a[i]]`` in
    any order reads only particles that are not overwritten."""
    rng = np.random.default_rng(5)
    for _ in range(200):
        weights = rng.dirichlet(np.full(10, 0.3))
        ancestors = resample(weights, scheme, rng)
        survivors = np.unique(ancestors)
        np.testing.assert_array_equal(ancestors[survivors], survivors)
        values = np.arange(10) * 10
        for i in rng.permutation(10):
            values[i] = values[ancestors[i]]
        np.testing.assert_array_equal(values, ancestors * 10)
