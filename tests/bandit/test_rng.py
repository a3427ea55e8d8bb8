"""Inverse-CDF draws (nslb_cli.bandit.rng.categorical and its first-axis twin) against the
definition, written as a loop over rows."""

from __future__ import annotations

import numpy as np

from nslb_cli.bandit.rng import categorical, categorical_first_axis


def first_above(masses: np.ndarray, u: float) -> int:
    """The definition, one row: the first index whose cumulative mass exceeds ``u`` times the
    total, the last if none does."""
    total = 0.0
    threshold = u * float(np.sum(np.cumsum(masses)[-1:]))
    for index, mass in enumerate(masses):
        total += mass
        if total > threshold:
            return index
    return len(masses) - 1


def rows() -> tuple[np.ndarray, np.ndarray]:
    """Masses with zeros (arms never drawn), rows of zero mass, and uniforms at 0 and just
    below 1."""
    rng = np.random.default_rng(11)
    probabilities = rng.random((2000, 6)) * (rng.random((2000, 6)) < 0.6)
    probabilities[:20] = 0.0
    uniforms = rng.random(2000)
    uniforms[::7] = 0.0
    uniforms[3::7] = 1.0 - 2.0**-53
    return probabilities, uniforms


def test_a_draw_is_the_first_cumulative_mass_above_u_times_the_total() -> None:
    probabilities, uniforms = rows()
    drawn = categorical(probabilities, uniforms)
    expected = [first_above(p, u) for p, u in zip(probabilities, uniforms, strict=True)]
    np.testing.assert_array_equal(drawn, expected)
    assert set(drawn[:20].tolist()) == {5}, "a row of zero mass gives the last index"
    inside = (uniforms < 0.99) & (probabilities.sum(axis=1) > 0)
    assert np.all(probabilities[inside, drawn[inside]] > 0), "a zero mass is never drawn"


def test_the_first_axis_draw_is_the_same_draw_on_the_transposed_masses() -> None:
    probabilities, uniforms = rows()
    first = categorical_first_axis(np.ascontiguousarray(probabilities.T), uniforms)
    np.testing.assert_array_equal(first, categorical(probabilities, uniforms))


def test_higher_dimensional_masses_draw_along_their_last_axis() -> None:
    rng = np.random.default_rng(3)
    probabilities, uniforms = rng.random((4, 5, 3)), rng.random((4, 5))
    drawn = categorical(probabilities, uniforms)
    for index in np.ndindex(4, 5):
        assert drawn[index] == first_above(probabilities[index], uniforms[index])
