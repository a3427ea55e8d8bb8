"""Environments: each builds a :class:`~nslb_cli.world.World` from its parameters and seeds.

``ENVIRONMENTS`` is the one registry that maps the config's ``env.name`` to a builder.
"""

from __future__ import annotations

from nslb_cli.envs.movielens import MovieLens
from nslb_cli.envs.synthetic import Synthetic

ENVIRONMENTS = {"synthetic": Synthetic, "movielens": MovieLens}

__all__ = ["ENVIRONMENTS"]
