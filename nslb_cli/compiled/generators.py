"""Each seed's agent generator as one ``numba.typed.List``, built by compiled code.

``numba.typed.List(generators)`` compiles its methods in every process, uncached; the
functions below do the same from cached compiled code. The list holds the generators
themselves: a draw through it advances the same bit generator state as a draw from Python.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numba.typed import List

from nslb_cli.compiled.jit import jit


@jit
def _first(generator: np.random.Generator) -> Any:
    generators = List()
    generators.append(generator)
    return generators


@jit
def _append(generators: Any, generator: np.random.Generator) -> None:
    generators.append(generator)


def generator_list(generators: Sequence[np.random.Generator]) -> Any:
    """``generators`` as a ``numba.typed.List`` (at least one generator)."""
    typed = _first(generators[0])
    for generator in generators[1:]:
        _append(typed, generator)
    return typed
