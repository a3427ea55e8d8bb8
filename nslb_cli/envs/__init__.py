"""Environments: each builds a :class:`~nslb_cli.world.World` from its parameters and seeds.

``ENVIRONMENTS`` is the one registry that maps the config's ``env.name`` to a builder; an
environment's module (and MovieLens' data dependencies) is imported only when it is used.
"""

from __future__ import annotations

from nslb_cli.registry import Registry

ENVIRONMENTS = Registry(
    "env",
    {
        "synthetic": "nslb_cli.envs.synthetic:Synthetic",
        "movielens": "nslb_cli.envs.movielens:MovieLens",
    },
)

__all__ = ["ENVIRONMENTS"]
