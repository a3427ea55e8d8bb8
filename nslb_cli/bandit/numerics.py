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


PAIRWISE_BLOCK = 128
"""numpy sums up to this many numbers in eight interleaved partial sums, and splits longer runs
in two (its ``pairwise_sum``)."""


def pairwise_sum_rows(values: np.ndarray) -> np.ndarray:
    """The sum over the first axis of ``values`` (``(n, …)``), added in the order numpy adds a
    contiguous row, so that ``pairwise_sum_rows(x.T)`` is ``x.sum(axis=1)`` to the last bit.

    ``x.sum(axis=0)`` adds whole rows one after another; ``x.sum(axis=1)`` adds each row's
    ``n`` numbers pairwise: one after another below 8, in eight interleaved partial sums
    combined as ``((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))`` then the rest up to
    ``PAIRWISE_BLOCK``, and beyond it as the sum of two halves (the first a multiple of 8).
    Code that keeps an array transposed for speed (state-major) keeps numpy's numbers with it.
    """
    n = len(values)
    if n < 8:
        return values.sum(axis=0)
    if n > PAIRWISE_BLOCK:
        half = n // 2 - (n // 2) % 8
        return pairwise_sum_rows(values[:half]) + pairwise_sum_rows(values[half:])
    partial = values[:8].copy()
    blocks = n - n % 8
    for start in range(8, blocks, 8):
        partial += values[start : start + 8]
    total = ((partial[0] + partial[1]) + (partial[2] + partial[3])) + (
        (partial[4] + partial[5]) + (partial[6] + partial[7])
    )
    for row in range(blocks, n):
        total = total + values[row]
    return total


def pairwise_plan(n: int) -> np.ndarray:
    """numpy's pairwise summation of ``n`` terms as a postfix program for compiled code,
    ``(P, 2)`` integers: a row ``(lo, m)`` sums the block of the ``m <= PAIRWISE_BLOCK`` terms
    from ``lo`` (as above), a row ``(-1, 0)`` adds the last two sums. numpy sums a run of more
    than ``PAIRWISE_BLOCK`` terms as the sum of its first ``h`` terms plus that of the
    others, ``h = n // 2`` rounded down to a multiple of 8. (A program rather than a recursive
    kernel: numba cannot load a recursive function back from its cache; the process
    crashes.)"""
    if n <= PAIRWISE_BLOCK:
        return np.array([[0, n]], dtype=np.int64)
    half = n // 2 - (n // 2) % 8
    right = pairwise_plan(n - half)
    right[right[:, 0] >= 0, 0] += half
    return np.concatenate([pairwise_plan(half), right, [[-1, 0]]])
