"""The inputs that shape a world, as a run folder records them (docs/design.md §6).

Each declared input file's SHA-256 is recorded in section ``FILES`` of the config, so an
edited file is another config.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

from nslb_cli.common.errors import ConfigError
from nslb_cli.data.prepared_cache import file_digest
from nslb_cli.envs import ENVIRONMENTS, later_defaults

FILES = "files"  # the config's section of input files' digests


def normal_path(value: Any) -> Any:
    """A path in one spelling, without ``.`` parts or trailing slashes; other values as they are."""
    return os.path.normpath(value) if isinstance(value, str) and value else value


def recorded(settings: dict[str, Any], params: Any) -> dict[str, Any]:
    """The config a run folder records for resolved ``settings`` and the environment's validated
    ``params``: paths normalised and, for declared files, the parameters and the files' digests."""
    paths = getattr(ENVIRONMENTS[params.name], "files", ())
    env = {k: normal_path(v) if k in paths else v for k, v in settings["env"].items()}
    found = [k for k in paths if env.get(k) is not None and Path(env[k]).expanduser().is_file()]
    record = {**settings, "name": normal_path(settings["name"]), "env": without_later(env)}
    if not found:
        return record
    validated = json.loads(json.dumps(dataclasses.asdict(params), default=str))
    record["env"] = without_later({**validated, **{k: env[k] for k in paths if k in env}})
    record[FILES] = {f"env.{k}": _digest(f"env.{k}", Path(env[k]).expanduser()) for k in found}
    return record


def without_later(env: dict[str, Any]) -> dict[str, Any]:
    """The config's ``env`` section without the parameters its environment added after
    results were on disk (``Section.added_later``) where they hold their defaults: results
    written before those parameters existed keep their result key and their study's world."""
    defaults = later_defaults(env.get("name"))
    return {k: v for k, v in env.items() if k not in defaults or v != defaults[k]}


def _digest(key: str, path: Path) -> str:
    """The SHA-256 of the file at ``path``, named by config ``key``; one line if unreadable."""
    try:
        return file_digest(path)
    except OSError as err:
        raise ConfigError(key, f"cannot read {path}: {err.strerror or err}") from None
