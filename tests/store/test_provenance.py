"""What a run folder's ``provenance.jsonl`` records of the time its seeds took to simulate."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from nslb_cli.store.provenance import seconds_by_seed
from tests.helpers.cli import QUICK, nslb


def test_each_batch_line_records_its_simulation_seconds_and_engine(tmp_path: Path) -> None:
    out = f"hydra.run.dir={tmp_path / 'r'}"
    run = nslb("run", *QUICK, "run.n_seeds=3", "run.batch_size=2", out, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    text = (tmp_path / "r/provenance.jsonl").read_text()
    lines = [json.loads(line) for line in text.splitlines()]
    assert [line["seeds"] for line in lines] == [[0, 1], [2]], "a line per batch"
    for line in lines:
        assert math.isfinite(line["seconds"]) and line["seconds"] > 0
        assert line["engine"] == "numpy"


def _lines(folder: Path, *entries: dict | str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    text = "".join((e if isinstance(e, str) else json.dumps(e)) + "\n" for e in entries)
    (folder / "provenance.jsonl").write_text(text)
    return folder


def test_a_batch_s_seconds_are_shared_by_its_seeds_the_last_line_of_a_seed_counting(
    tmp_path: Path,
) -> None:
    folder = _lines(
        tmp_path,
        {"seeds": [0, 1], "seconds": 3.0},
        {"seeds": [2, 3], "seconds": 1.0},
        '{"seeds": [4], "seco',  # a damaged line: read past
        {"seeds": [3], "seconds": 0.25},  # seed 3 simulated again: this line wrote it
        {"seeds": [4, 5]},  # a build that recorded no time
        {"seeds": [6], "seconds": float("nan")},
        {"seeds": [7], "seconds": 0},
        {"seeds": [1]},  # seed 1 simulated again by such a build: its time is unknown
    )
    assert seconds_by_seed(folder) == pytest.approx({0: 1.5, 2: 0.5, 3: 0.25})
