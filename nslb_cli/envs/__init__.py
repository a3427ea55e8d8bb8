"""Environments: each builds a ``World`` from its parameters and seeds.

``ENVIRONMENTS`` is the one registry that maps the config's ``env.name`` to a builder: every
environment, built-in (``synthetic``, ``movielens``) or from another installed package, is an
entry point of the group ``nslb.envs`` (see ``nslb_cli.api``). An environment's module
(and MovieLens' data dependencies) is imported only when it is used.

* ``synthetic`` — the paper's section 5.1 (docs/design.md §3.1);
* ``movielens`` — the paper's section 5.2 (docs/design.md §3.2);
* ``logged`` — a world and an offline model learned from a log file (§3.8);
* and the successors' families (§3.3-3.6).

May import: ``nslb_cli.data``, ``nslb_cli.learning``, ``nslb_cli.bandit`` and
``nslb_cli.common``. Never the
agents (a world is the same whoever plays it) or the runner.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from nslb_cli.common.registry import InvalidEntry, PluginError, Registry, require_params

GROUP = "nslb.envs"


SIZES = ("n_arms", "n_states", "horizon")  # Params fields every environment has


def check_environment_class(name: str, cls: object) -> None:
    """Raise ``InvalidEntry`` unless ``cls`` has a callable
    ``build(params, seeds)``, a boolean ``contextual``, a valid ``Params`` dataclass for
    the name ``name`` with the fields ``SIZES``, and, if any, ``files`` naming its
    fields (``nslb_cli.api``)."""
    if not isinstance(cls, type):
        raise InvalidEntry(f"{cls!r} is not a class")
    if not callable(getattr(cls, "build", None)):
        raise InvalidEntry(f"{cls.__name__} has no build(params, seeds) method")
    if not isinstance(getattr(cls, "contextual", None), bool):
        raise InvalidEntry(f"{cls.__name__}.contextual must be True or False")
    require_params(name, cls)
    params: type = getattr(cls, "Params")  # noqa: B009  (a dataclass: checked just above)
    names = {f.name for f in fields(params)}
    missing = [key for key in SIZES if key not in names]
    if missing:
        raise InvalidEntry(f"{params.__name__} has no field {', '.join(missing)}")
    files = getattr(cls, "files", ())
    if not (isinstance(files, tuple) and all(isinstance(f, str) and f in names for f in files)):
        raise InvalidEntry(f"{cls.__name__}.files must be a tuple of {params.__name__} fields")


ENVIRONMENTS = Registry("env", GROUP, check_environment_class)


def later_defaults(name: object) -> dict[str, Any]:
    """The defaults of the parameters environment ``name`` added after results were on disk
    (``Section.added_later``: recorded only away from their defaults, which never change);
    empty for an environment that cannot be had (refused in its own line elsewhere)."""
    if not isinstance(name, str) or name not in ENVIRONMENTS:
        return {}
    try:
        schema = ENVIRONMENTS[name].Params
    except PluginError:
        return {}
    later = getattr(schema, "added_later", ())
    return {f.name: f.default for f in fields(schema) if f.name in later}


__all__ = ["ENVIRONMENTS", "later_defaults"]
