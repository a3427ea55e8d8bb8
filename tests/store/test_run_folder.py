"""What a run folder holds for a result key (``nslb_cli.store.run_folder.RunFolder``)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from nslb_cli.store.folder import OutputConflict, read_config
from nslb_cli.store.results import Layout
from nslb_cli.store.run_folder import RunFolder
from tests.helpers.results_tree import write_run


def _without(tmp_path: Path, entry: str) -> RunFolder:
    """The run folder of two seeds whose seed 1's record has lost ``entry``."""
    folder = write_run(tmp_path / "r", "random", [0, 1])
    config = read_config(folder)
    assert config is not None
    record = json.loads((folder / "seed=1.json").read_text())
    del record[entry]
    (folder / "seed=1.json").write_text(json.dumps(record))
    return RunFolder(folder, config, None, Layout(), batch_size=100)


def test_a_seed_whose_record_names_no_config_is_never_adopted(tmp_path: Path) -> None:
    """Every record nslb writes names its result key: one without it is of no known config,
    foreign even where ``config.yaml`` is this config, and the folder is refused."""
    run = _without(tmp_path, "config")
    with run.open(), pytest.raises(OutputConflict, match="seed=1 record another key"):
        run.missing([0, 1])


def test_a_seed_whose_record_lost_its_integrity_is_simulated_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Every record nslb writes holds its CSV's size and CRC-32: one of this key without
    them no longer vouches for its CSV, which is simulated again (one line)."""
    run = _without(tmp_path, "csv")
    with caplog.at_level(logging.WARNING, "nslb"), run.open():
        assert run.missing([0, 1]).tolist() == [1] and run.done == {0}
    (line,) = caplog.messages
    assert "seed=1.csv is damaged" in line and "simulating it again" in line, line
