"""Run folders' names: a job's overrides as a folder name, and where a sweep job writes
(the resolvers ``nslb_folder`` and ``nslb_job_folder`` of ``conf/config.yaml``)."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

MAX_NAME = 200
"""Bytes of a run folder's name (the filesystem allows 255): a longer list of overrides is
shortened to a readable prefix and a hash of the whole."""
BLOCKED = ".nslb-blocked"
"""Where a sweep job whose folder is blocked (a file stands in its way) runs, to fail there."""


def folder_name(override_dirname: str) -> str:
    """Hydra's ``key=value,…`` override list as a folder name: ``+``/``++`` prefixes dropped
    and items sorted, a path value as its last part and a hash of the whole path
    (``env.data_dir=ml-100k-3f2a9c1e``), and a name longer than ``MAX_NAME`` bytes cut to
    a prefix and a hash of the whole."""
    items = re.split(r",(?=[^,=]+=)", override_dirname) if override_dirname else []
    name = ",".join(sorted(_shown(item.lstrip("+")) for item in items))
    if len(name.encode()) <= MAX_NAME:
        return name
    prefix = name.encode()[: MAX_NAME - 13].decode(errors="ignore").rstrip(",")
    return f"{prefix}-{_digest(name, 12)}"


def _shown(item: str) -> str:
    """One ``key=value`` of a folder name; a path value becomes ``<last part>-<hash>``."""
    key, sep, value = item.partition("=")
    bare = value.strip("'\"")
    if not sep or not ("/" in bare or bare.startswith("~")):
        return item
    path = os.path.abspath(os.path.expanduser(bare))
    return f"{key}={Path(path).name or 'root'}-{_digest(path, 8)}"


def _digest(text: str, digits: int) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:digits]


def job_folder(sweep_dir: str, env: str, agent: str, override_dirname: str) -> str:
    """A sweep job's folder below ``sweep_dir``: ``<env>/<agent>/<folder_name>``, or, when a
    file stands there, a hidden folder of ``BLOCKED`` where the job only records its failure."""
    relative = f"{env}/{agent}/{folder_name(override_dirname)}"
    blocked = Path(sweep_dir) / relative
    if any(p.exists() and not p.is_dir() for p in (blocked, *blocked.parents)):
        return f"{BLOCKED}/{_digest(relative, 12)}"
    return relative


def intended_folder(sweep_dir: str, env: str, agent: str, override_dirname: str) -> Path:
    """Where a sweep job's results belong (what ``job_folder`` gives when unblocked)."""
    return Path(sweep_dir) / env / agent / folder_name(override_dirname)
