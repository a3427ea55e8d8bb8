"""Numerical helpers shared by agents and environments."""

from __future__ import annotations

import numpy as np


def shifted_exp(log_values: np.ndarray) -> np.ndarray:
    """``exp(x - max x)`` along the last axis: proportional to ``exp(x)``, without overflow."""
    return np.exp(log_values - log_values.max(axis=-1, keepdims=True))


def normalised_exp(log_values: np.ndarray) -> np.ndarray:
    """``exp(x_i) / sum_j exp(x_j)`` along the last axis (a softmax), computed stably."""
    weights = shifted_exp(log_values)
    return weights / weights.sum(axis=-1, keepdims=True)
