"""The JAX engine (``run.engine=jax``): the world and the agent of a batch of seeds in one
compiled program, ``lax.scan`` over rounds inside ``vmap`` over seeds (docs/design.md §9).

Each seed's numbers come from keys folded from its seed alone, so a seed gives the same
numbers in any batch; they are not the default engine's numbers (another generator), and the
two engines agree in distribution, which ``tests/jax_engine`` and ``nslb check`` test.
JAX is an optional extra (``pip install -e '.[jax]'``): without it, choosing this engine is
one line naming the extra, and nothing here is imported.
"""

import os

from nslb_cli.common.cpus import usable_cpus

# nslb runs several processes on one machine at once (make paper's presets, a joblib sweep):
# JAX's default of taking 75 % of a GPU's memory in each process would fail the second one
# (CUDA_ERROR_OUT_OF_MEMORY). Each process takes what it needs instead, unless the user said
# otherwise. Set before JAX is first imported (this package's modules import it).
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
# On a CPU, one JAX device per usable CPU: a batch's lanes are split between them and run in
# parallel (XLA runs one device's program on one thread), unless the user set the count.
if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
    flags = os.environ.get("XLA_FLAGS", "")
    count = f"--xla_force_host_platform_device_count={usable_cpus()}"
    os.environ["XLA_FLAGS"] = f"{flags} {count}".strip()
