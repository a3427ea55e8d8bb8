"""The JAX engine (``run.engine=jax``): the world and the agent of a batch of seeds in one
compiled program, ``lax.scan`` over rounds inside ``vmap`` over seeds (docs/design.md §9).

Each seed's numbers come from keys folded from its seed alone, so a seed gives the same
numbers in any batch; they are not the default engine's numbers (another generator), and the
two engines agree in distribution, which ``tests/jax_engine`` and ``nslb check`` test.
JAX is an optional extra (``pip install -e '.[jax]'``): without it, choosing this engine is
one line naming the extra, and nothing here is imported.
"""
