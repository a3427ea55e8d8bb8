"""``nslb plot`` run in the test's process, its figures caught as they are saved."""

from __future__ import annotations

from pathlib import Path

import pytest
from matplotlib.figure import Figure

from nslb_cli.cli import main
from nslb_cli.plot import figures


def drawn(monkeypatch: pytest.MonkeyPatch, *argv: object) -> dict[str, Figure]:
    """Run ``nslb plot`` (in this process) and return every Figure by file stem, as it is
    handed over to be saved."""
    found: dict[str, Figure] = {}
    original = figures.save

    def keep(figure: Figure, stem: Path, formats: object, dpi: int) -> list[Path]:
        found[stem.name] = figure
        return original(figure, stem, formats, dpi)  # type: ignore[arg-type]

    monkeypatch.setattr(figures, "save", keep)
    main(["plot", *map(str, argv), "--format", "png"])
    return found
