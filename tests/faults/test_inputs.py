"""Every input that shapes a world is part of its identity by content: an edited table, item
file or plugin input file is another config, refused in the old one's folder in one line;
config.yaml and the plot describe what was simulated; one path in two spellings is one
config; seeds of another nslb version never join a folder silently."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from nslb_cli.common.errors import ConfigError
from nslb_cli.common.registry import InvalidEntry
from nslb_cli.envs import GROUP as ENV_GROUP
from nslb_cli.envs import check_environment_class
from nslb_cli.envs.piecewise import Piecewise, PiecewiseParams
from nslb_cli.runner.compose import check_command_line
from nslb_cli.runner.inputs import recorded
from tests.faults.test_folders import one_error_line
from tests.helpers.cli import nslb, nslb_process
from tests.helpers.faults import snapshot
from tests.helpers.movielens import TINY_RUN, tiny_release, write_generic
from tests.helpers.plugins import fake_distribution, nslb_with

PIECEWISE = ["env=piecewise", "env.horizon=50", "run.progress=false"]
TABLE = "start,a,b\n0,0.1,0.9\n25,0.9,0.1\n"


def test_an_edited_table_is_another_config_and_the_record_is_the_table(tmp_path: Path) -> None:
    (tmp_path / "tab.csv").write_text(TABLE)
    first = nslb("run", *PIECEWISE, "env.table=tab.csv", "run.n_seeds=2", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    folder = tmp_path / "outputs/default/piecewise/mts/env.horizon=50,env.table=tab.csv"
    env = yaml.safe_load((folder / "config.yaml").read_text())["env"]
    assert (env["means"], env["change_points"]) == ([[0.1, 0.9], [0.9, 0.1]], [0, 25])
    assert (env["n_arms"], env["n_states"]) == (2, 2)
    plotted = nslb("plot", str(folder), cwd=tmp_path)
    assert "means=[[0.1, 0.9], [0.9, 0.1]], change_points=[0, 25]" in plotted.stdout
    before = snapshot(folder)
    (tmp_path / "tab.csv").write_text(TABLE + "\n")  # the same means, another file
    edited = nslb("run", *PIECEWISE, "env.table=tab.csv", "run.n_seeds=3", cwd=tmp_path)
    line = one_error_line(edited.stderr)
    assert edited.returncode == 2 and str(folder) in line and "files.env.table" in line
    assert {k: v for k, v in snapshot(folder).items() if k.startswith("seed=")} == {
        k: v for k, v in before.items() if k.startswith("seed=")
    }


def test_a_table_with_means_of_its_own_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The folder would be named after means (or change points) that were never simulated;
    refused by the check of the command line, before anything runs."""
    (tmp_path / "tab.csv").write_text(TABLE)
    monkeypatch.chdir(tmp_path)
    for given in ("env.means=[[0.2,0.8]]", "env.change_points=[0,5]"):
        with pytest.raises(ConfigError) as refused:
            check_command_line([*PIECEWISE, "env.table=tab.csv", given], multirun=False)
        assert str(refused.value).startswith("env.table: replaces means"), given


def test_one_name_or_data_folder_in_two_spellings_is_one_config(tmp_path: Path) -> None:
    """``name=./foo`` is ``foo``; ``env.data_dir=…/`` is ``env.data_dir=…``; an edited item
    file (its genres decide the movies offered) is other data."""
    quick = ["env.horizon=50", "run.progress=false"]
    assert nslb_process("run", "name=foo", *quick, "run.n_seeds=2", cwd=tmp_path).returncode == 0
    again = nslb_process("run", "name=./foo", *quick, "run.n_seeds=3", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert len(list(tmp_path.glob("outputs/foo/synthetic/mts/*/seed=*.csv"))) == 3
    data = write_generic(tiny_release(), tmp_path / "mine")
    run = ["run", "env=movielens", "agent=random", *TINY_RUN]
    assert nslb_process(*run, f"env.data_dir={data}", cwd=tmp_path).returncode == 0
    slash = nslb_process(*run, f"env.data_dir={data}/", "run.n_seeds=3", cwd=tmp_path)
    assert slash.returncode == 0, slash.stderr
    (folder,) = tmp_path.glob("outputs/default/movielens/random/*")
    assert len(list(folder.glob("seed=*.csv"))) == 3
    assert yaml.safe_load((folder / "config.yaml").read_text())["env"]["data_dir"] == str(data)
    items = data / "items.csv"
    items.write_text(items.read_text().replace("|", "|Drama|", 1))
    edited = nslb_process(*run, f"env.data_dir={data}", "run.n_seeds=4", cwd=tmp_path)
    line = one_error_line(edited.stderr)
    assert edited.returncode == 2 and "other data (items.csv changed" in line
    assert len(list(folder.glob("seed=*.csv"))) == 3


def test_seeds_of_another_nslb_version_are_not_joined_silently(tmp_path: Path) -> None:
    quick = ["env.horizon=50", "run.progress=false", "hydra.run.dir=r"]
    assert nslb("run", *quick, "run.n_seeds=2", cwd=tmp_path).returncode == 0
    record = tmp_path / "r/provenance.jsonl"
    entry = json.loads(record.read_text())
    record.write_text(json.dumps({**entry, "nslb": "0.0.1"}) + "\n")
    more = nslb("run", *quick, "run.n_seeds=3", cwd=tmp_path)
    line = one_error_line(more.stderr)
    assert more.returncode == 2 and "nslb 0.0.1" in line and "run.overwrite=true" in line
    assert len(list((tmp_path / "r").glob("seed=*.csv"))) == 2
    assert nslb("run", *quick, "run.n_seeds=2", cwd=tmp_path).returncode == 0  # adds nothing
    redone = nslb("run", *quick, "run.n_seeds=3", "run.overwrite=true", cwd=tmp_path)
    assert redone.returncode == 0, redone.stderr
    assert "0.0.1" not in record.read_text()


def test_a_provenance_file_that_is_not_utf8_is_read_past(tmp_path: Path) -> None:
    """A damaged line of ``provenance.jsonl`` (here bytes that are not UTF-8) is skipped as
    a cut one is: the default engine adds seeds (its numbers are pinned by nslb's version,
    which the other line records); it gave a traceback."""
    quick = ["env.horizon=50", "run.progress=false", "hydra.run.dir=r"]
    assert nslb("run", *quick, "run.n_seeds=2", cwd=tmp_path).returncode == 0
    with (tmp_path / "r/provenance.jsonl").open("ab") as record:
        record.write(b"\xff\xfe not text\n")
    more = nslb("run", *quick, "run.n_seeds=3", cwd=tmp_path)
    assert more.returncode == 0, more.stderr
    assert len(list((tmp_path / "r").glob("seed=*.csv"))) == 3


PLUGIN = """
from dataclasses import dataclass, replace
from pathlib import Path

from nslb_cli.envs.piecewise import Piecewise, PiecewiseParams


@dataclass
class Params(PiecewiseParams):
    name: str = "from_file"
    shift: str = "shift.txt"


class Env:
    Params = Params
    contextual = False
    files = ("shift",)

    @staticmethod
    def build(p, seeds):
        world = Piecewise.build(p, seeds)
        shift = float(Path(p.shift).read_text())  # read here only: in no parameter
        return replace(world, mean_rewards=world.mean_rewards - shift)
"""


def test_a_file_a_plugin_declares_is_part_of_the_identity(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "plugin_from_file.py").write_text(PLUGIN)
    fake_distribution(site, "from-file", "1.0", {ENV_GROUP: {"from_file": "plugin_from_file:Env"}})
    (tmp_path / "shift.txt").write_text("0.0\n")
    run = ["run", "env=from_file", "agent=random", "run.progress=false", "hydra.run.dir=r"]
    first = nslb_with(str(site), *run, "run.n_seeds=2", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    (tmp_path / "shift.txt").write_text("0.1\n")
    edited = nslb_with(str(site), *run, "run.n_seeds=3", cwd=tmp_path)
    assert edited.returncode == 2 and "files.env.shift" in one_error_line(edited.stderr)


def test_a_declaration_of_files_names_fields_of_the_params() -> None:
    """Not a list, not a name the Params lack, not a number."""
    for files in (["table"], ("tables",), (1,)):
        bad = type("Bad", (Piecewise,), {"files": files})
        with pytest.raises(InvalidEntry, match=r"Bad\.files must be a tuple of PiecewiseParams"):
            check_environment_class("piecewise", bad)


def test_an_unreadable_input_file_is_one_line_naming_its_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = tmp_path / "tab.csv"
    table.write_text(TABLE)

    def refuse(path: Path) -> str:
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr("nslb_cli.runner.inputs.file_digest", refuse)
    settings = {"name": "default", "env": {"name": "piecewise", "table": str(table)}}
    with pytest.raises(ConfigError, match=rf"^env.table: cannot read {table}: Permission denied$"):
        recorded(settings, PiecewiseParams(table=str(table), horizon=50))
