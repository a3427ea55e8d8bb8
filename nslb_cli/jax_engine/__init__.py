"""The JAX engine (``run.engine=jax``): the world and the agent of a batch of seeds in one
compiled program, ``lax.scan`` over rounds inside ``vmap`` over seeds (docs/design.md §9).

Each seed's numbers come from keys folded from its seed alone, so a seed gives the same
numbers in any batch; they are not the default engine's numbers (another generator), and the
two engines agree in distribution, which ``tests/jax_engine`` and ``nslb check`` test.
JAX is an optional extra (``pip install -e '.[jax]'``): without it, choosing this engine is
one line naming the extra, and nothing here is imported.
"""

import os

# nslb runs several processes on one machine at once (make paper's presets, a joblib sweep):
# JAX's default of taking 75 % of a GPU's memory in each process would fail the second one
# (CUDA_ERROR_OUT_OF_MEMORY). Each process takes what it needs instead, unless the user said
# otherwise. Set before JAX is first imported (this package's modules import it).
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
