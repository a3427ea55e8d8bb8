"""Whether the papers' claims held: one claim table per paper whose presets' results are
present, written by ``nslb plot --paper`` (``reproduction.md`` for Hong et al.,
``reproduction-russo2024.md``, ``reproduction-trella2025.md``, ``reproduction-offline.md``;
docs/design.md §5). ``papers`` declares each paper's claims and settings, ``table`` tests them
and writes the table."""

from nslb_cli.plot.reproduction.claims import Claim, Paper, Setting
from nslb_cli.plot.reproduction.papers import HONG, OFFLINE, PAPERS, RUSSO, TRELLA
from nslb_cli.plot.reproduction.table import (
    ALIKE_MARGIN,
    ALPHA,
    COLUMNS,
    check,
    holm,
    latex,
    markdown,
    p_value,
    present,
)

__all__ = [
    "ALIKE_MARGIN", "ALPHA", "COLUMNS", "HONG", "OFFLINE", "PAPERS", "RUSSO", "TRELLA", "Claim",
    "Paper", "Setting", "check", "holm", "latex", "markdown", "p_value", "present",
]  # fmt: skip
