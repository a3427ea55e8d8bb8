"""The offline model's predicted means: the definition, batch invariance (docs/design.md §2)."""

from __future__ import annotations

import numpy as np
import pytest

from nslb_cli.bandit.problem import OfflineModel


def linear_model(runs: int, states: int, dim: int, rng: np.random.Generator) -> OfflineModel:
    return OfflineModel(
        means=rng.normal(size=(runs, states, dim)),
        mean_sd=np.zeros((runs, states, 0)),
        transitions=np.full((runs, states, states), 1.0 / states),
        concentration=None,
        initial=np.full((runs, states), 1.0 / states),
        covariance=np.repeat(np.eye(dim)[None, None], runs, axis=0),
    )


@pytest.mark.parametrize(("states", "arms", "dim"), [(5, 20, 20), (3, 6, 3), (2, 7, 5)])
def test_linear_expected_rewards_are_per_run_and_batch_invariant(
    states: int, arms: int, dim: int
) -> None:
    # mu(a, X_t, s) = X_t[a] . theta_s. The stacked matmul must give every run the same bits
    # alone and at any position in a batch (odd sizes put runs at unaligned offsets).
    rng = np.random.default_rng(arms)
    runs = 9
    model = linear_model(runs, states, dim, rng)
    contexts = rng.normal(size=(runs, arms, dim))
    batch = model.expected_rewards(contexts)
    assert batch.shape == (runs, states, arms)
    expected = np.einsum("rsd,rad->rsa", model.means, contexts)
    np.testing.assert_allclose(batch, expected, rtol=1e-12, atol=1e-12)
    for r in range(runs):
        for part in (slice(r, r + 1), slice(r, None), slice(None, r + 1)):
            sub = OfflineModel(**{**model.__dict__, "means": model.means[part]})
            position = r - (part.start or 0)
            alone = sub.expected_rewards(contexts[part])[position]
            np.testing.assert_array_equal(alone, batch[r])


def test_multi_armed_expected_rewards_are_the_means() -> None:
    model = linear_model(2, 3, 4, np.random.default_rng(0))
    multi = OfflineModel(**{**model.__dict__, "covariance": None})
    assert multi.expected_rewards(None) is multi.means
