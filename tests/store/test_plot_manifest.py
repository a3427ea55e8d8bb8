"""The record of the files ``nslb plot`` writes into a folder (``.nslb-plot.json``)."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from nslb_cli.store.folder import PLOT_MANIFEST, claim_plotted


def test_concurrent_plots_lose_no_record_and_leave_no_lock_file(tmp_path: Path) -> None:
    """Plots claiming names at once each add theirs (read, add, replace under one lock);
    the lock is the folder's own, so the figures folder holds the record and nothing else."""
    names = [f"figure{i}.png" for i in range(120)]
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda name: claim_plotted(tmp_path, [name]), names))
    assert json.loads((tmp_path / PLOT_MANIFEST).read_text())["files"] == sorted(names)
    assert [p.name for p in tmp_path.iterdir()] == [PLOT_MANIFEST]
