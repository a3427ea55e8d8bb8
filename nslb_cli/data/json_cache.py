"""A cache of JSON records, each in a file of its own that a user can read, keyed by a hash of
everything that determines it (``env=logged``'s fitted models).

As ``prepared_cache``'s files, each record heals itself: it is written atomically
(``nslb_cli.store.atomic``) with its key and a checksum, the SHA-256 of the rest of it
(``json.dumps`` with sorted keys); a file that is not JSON, holds another key or whose
checksum disagrees (truncated, edited, a flipped digit) counts as absent, after one warning
line, and the caller builds the record again and overwrites it. A write that fails says so
in one warning line and the caller goes on with the record in memory.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from nslb_cli.data.prepared_cache import cause, warn
from nslb_cli.store.atomic import atomic_write_text

KEY_FIELD = "cache_key"
CHECKSUM_FIELD = "checksum"
AGAIN = "fitting again"


def checksum(record: dict[str, Any]) -> str:
    """The SHA-256 of ``record`` without its checksum, as canonical JSON."""
    rest = {k: v for k, v in record.items() if k != CHECKSUM_FIELD}
    return hashlib.sha256(json.dumps(rest, sort_keys=True).encode()).hexdigest()


def load(path: Path, key: str) -> dict[str, Any] | None:
    """The record stored at ``path`` under ``key``, or ``None`` if absent or unusable (one
    warning line for a file that exists but cannot be used)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except Exception as err:
        warn(f"cannot read the fitted-model cache {path} ({cause(err)}): {AGAIN}")
        return None
    try:
        record = json.loads(text)
        if not isinstance(record, dict) or record.get(CHECKSUM_FIELD) != checksum(record):
            raise ValueError("checksum mismatch")
    except ValueError as err:
        warn(f"damaged fitted-model cache {path} ({cause(err)}): {AGAIN}")
        return None
    if record.get(KEY_FIELD) != key:
        warn(f"the fitted-model cache {path} was written for other settings: {AGAIN}")
        return None
    return record


def save(path: Path, key: str, record: dict[str, Any]) -> bool:
    """Store ``record`` at ``path`` under ``key``, atomically; ``False`` (after one warning
    line) when the file cannot be written."""
    stored = {KEY_FIELD: key, **record}
    stored[CHECKSUM_FIELD] = checksum(stored)
    try:
        atomic_write_text(path, json.dumps(stored, indent=1) + "\n")
    except OSError as err:
        warn(f"cannot write the fitted-model cache {path} ({cause(err)}): it is fitted again")
        return False
    return True
