"""How the command line reports bad input: one line on stderr, exit status 2."""

from __future__ import annotations

import sys
from typing import NoReturn

from nslb_cli.common.stopping import pending


def fail(message: str) -> NoReturn:
    """Print ``nslb: error: message`` to stderr and exit with status 2 — unless a signal
    asked nslb to stop meanwhile: then the error is that request (one line of its own)."""
    stop = pending()
    if stop is not None:
        raise stop
    print(f"nslb: error: {message}", file=sys.stderr)
    raise SystemExit(2)


def warn(message: str) -> None:
    """Print ``nslb: warning: message`` to stderr and go on."""
    print(f"nslb: warning: {message}", file=sys.stderr)
