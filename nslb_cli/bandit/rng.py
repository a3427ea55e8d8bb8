"""Random streams: common random numbers and batch invariance (docs/design.md §2).

Every seed owns independent streams derived with ``numpy.random.SeedSequence``:

* ``generator(seed, stream)`` — one generator per purpose (``Stream``): the
  environment's randomness is split into true parameters, latent path, reward noise,
  contexts and the logs a learned offline model is fitted to, so that, e.g., a longer
  horizon leaves the true parameters of a seed unchanged; it never depends on the agent.
  ``Stream.AGENT`` is the agent's.
* ``BatchRNG`` — the agent's randomness, one generator per seed.

Batched code draws from each seed's generator separately and stacks the results, so the
numbers seed ``k`` sees do not depend on which other seeds share its batch.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import IntEnum
from typing import Any

import numpy as np


class Stream(IntEnum):
    """Purpose-specific sub-streams of one seed."""

    PARAMETERS = 0
    PATH = 1
    NOISE = 2
    CONTEXTS = 3
    OFFLINE = 4  # the logs an offline model is learned from (env.model=learned), and its EM
    AGENT = 100


def generator(seed: int, stream: Stream) -> np.random.Generator:
    """The generator of ``stream`` for ``seed``: independent of every other (seed, stream)."""
    return np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(int(stream),)))


class BatchRNG:
    """One agent generator per seed; every method returns arrays with a leading runs axis."""

    def __init__(self, seeds: Iterable[int]) -> None:
        self.generators = [generator(s, Stream.AGENT) for s in seeds]
        self._typed: Any = None  # numba.typed.List, built on first use

    def __len__(self) -> int:
        return len(self.generators)

    def random(self, shape: tuple[int, ...] = ()) -> np.ndarray:
        """Uniform(0, 1) draws of shape ``(runs, *shape)``."""
        return np.stack([g.random(shape) for g in self.generators])

    def normal(self, shape: tuple[int, ...] = ()) -> np.ndarray:
        """Standard normal draws of shape ``(runs, *shape)``."""
        return np.stack([g.standard_normal(shape) for g in self.generators])

    def integers(self, high: int, shape: tuple[int, ...] = ()) -> np.ndarray:
        """Uniform integers in ``[0, high)`` of shape ``(runs, *shape)``."""
        return np.floor(self.random(shape) * high).astype(np.int64)

    def typed(self) -> Any:
        """The same generators as a ``numba.typed.List``, for compiled kernels (built once;
        numba is imported on first use)."""
        if self._typed is None:
            from nslb_cli.compiled.generators import generator_list

            self._typed = generator_list(self.generators)
        return self._typed

    def beta(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Beta(a, b) draws, one per entry of ``a`` and ``b`` (same shape, leading axis = runs)."""
        return np.stack([g.beta(x, y) for g, x, y in zip(self.generators, a, b, strict=True)])


def categorical(probabilities: np.ndarray, uniforms: np.ndarray) -> np.ndarray:
    """Inverse-CDF draw along the last axis: the first index whose cumulative mass exceeds
    ``u`` times the total (the last index if none does, as rounding may make it for ``u``
    near 1, or for a total of 0).

    ``probabilities`` need not be normalised; ``uniforms`` has the shape of
    ``probabilities`` without its last axis.
    """
    cdf = np.add.accumulate(probabilities, axis=-1)
    above = cdf > (uniforms * cdf[..., -1])[..., None]
    above[..., -1] = True
    return above.argmax(axis=-1)


def categorical_first_axis(probabilities: np.ndarray, uniforms: np.ndarray) -> np.ndarray:
    """``categorical`` along the first axis (categories first, e.g. ``(S, R)``): the
    number of cumulative masses at most ``u`` times the total, capped at the last."""
    cdf = np.add.accumulate(probabilities, axis=0)
    index = (cdf <= uniforms * cdf[-1]).sum(axis=0)
    return np.minimum(index, len(probabilities) - 1)
