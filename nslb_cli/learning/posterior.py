"""What an agent is told of a model learned by EM (docs/design.md §3.7): the posterior of each
parameter given the fit's expected sufficient statistics, under weak conjugate priors, so that
umTS's prior narrows as the logs grow; and the alignment of fitted states with true ones.

With ``n_sa = E[pulls of a in s]`` and ``y_sa = E[sum of their rewards]``:

* Gaussian: ``mu(a, s) ~ N(m0, sigma^2)`` a priori (one pseudo-pull at the logs' mean reward
  ``m0``), so ``mu(a, s) | logs ~ N((y_sa + m0) / (n_sa + 1), sigma^2 / (n_sa + 1))``;
* Bernoulli: ``mu(a, s) ~ Beta(1, 1)``, so ``mu(a, s) | logs ~ Beta(1 + y_sa, 1 + n_sa - y_sa)``;
* categorical: ``O[s, a, ·] ~ Dir(1)``, so ``O[s, a, ·] | logs ~ Dir(1 + E[#o from a in s])``;
* transitions: ``P[s, ·] ~ Dir(1)``, so ``P[s, ·] | logs ~ Dir(1 + E[#s -> ·])``.

The point estimate (mTS's model) is each posterior's mean.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

import numpy as np

from nslb_cli.learning.em import Fit, Parameters


@dataclass(frozen=True)
class Posterior:
    """An agent's offline model: ``means`` and ``mean_sd`` ``(S, K)`` of ``mu(a, s)``, the
    Dirichlet ``concentration`` of each row of ``P`` and its mean ``transitions``, the law of
    ``S_1`` (``initial``) and, for categorical outcomes, the mean ``O`` (``outcomes``; the
    caller's outcome rewards then give ``means``)."""

    means: np.ndarray
    mean_sd: np.ndarray
    transitions: np.ndarray
    concentration: np.ndarray
    initial: np.ndarray
    outcomes: np.ndarray | None = None

    def reordered(self, order: np.ndarray) -> Posterior:
        """The same model with its states relabelled: new state ``s`` is old ``order[s]``."""
        moved = {f.name: getattr(self, f.name) for f in fields(self)}
        moved = {k: None if v is None else v[order] for k, v in moved.items()}
        both = np.ix_(order, order)
        moved |= {"transitions": self.transitions[both], "concentration": self.concentration[both]}
        return replace(self, **moved)


def posterior(fit: Fit) -> Posterior:
    """The posterior of the model given ``fit``'s expected counts (module docstring)."""
    counts = fit.counts
    concentration = 1.0 + counts.transitions
    transitions = concentration / concentration.sum(axis=1, keepdims=True)
    initial = fit.parameters.initial
    n, y = counts.pulls, counts.sums
    outcomes = None
    if fit.emission == "gaussian":
        assert fit.parameters.sigma is not None
        m0 = y.sum() / n.sum()
        means = (y + m0) / (n + 1.0)
        mean_sd = fit.parameters.sigma[:, None] / np.sqrt(n + 1.0)
    elif fit.emission == "bernoulli":
        means = (1.0 + y) / (n + 2.0)
        mean_sd = np.sqrt(means * (1.0 - means) / (n + 3.0))  # Beta(a, b): m (1 - m) / (a + b + 1)
    else:
        laws = 1.0 + counts.outcomes
        outcomes = laws / laws.sum(axis=-1, keepdims=True)
        means, mean_sd = np.zeros(n.shape), np.zeros(n.shape)  # the caller's, from outcomes
    return Posterior(means, mean_sd, transitions, concentration, initial, outcomes)


def align_states(fitted: np.ndarray, true: np.ndarray) -> np.ndarray:
    """``order`` with ``fitted[order]`` matched to ``true`` row by row: the permutation of
    least total squared distance between rows (rows: states; an optimal assignment)."""
    from scipy.optimize import linear_sum_assignment  # scipy loads in 0.3 s: only when used

    flat_fitted = fitted.reshape(len(fitted), -1)
    flat_true = true.reshape(len(true), -1)
    cost = ((flat_true[:, None, :] - flat_fitted[None, :, :]) ** 2).sum(axis=-1)
    _, order = linear_sum_assignment(cost)
    return np.asarray(order, dtype=np.int64)


def estimation_errors(
    fitted: Parameters, true_means: np.ndarray, true_transitions: np.ndarray
) -> dict[str, float]:
    """Root mean square errors of the fitted emission (``means``, or ``outcomes`` against
    ``true_means`` of shape ``(S, K, N)``) and of ``P``, after ``align_states``."""
    emission = fitted.outcomes if fitted.outcomes is not None else fitted.means
    assert emission is not None
    order = align_states(emission, true_means)
    aligned = fitted.reordered(order)
    emission = aligned.outcomes if aligned.outcomes is not None else aligned.means
    return {
        "mean_error": float(np.sqrt(np.mean((emission - true_means) ** 2))),
        "transition_error": float(np.sqrt(np.mean((aligned.transitions - true_transitions) ** 2))),
    }
