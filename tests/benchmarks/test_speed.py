"""``make bench``'s machinery: table, repeats, baseline trees, workers (no timing asserted)."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import speed as bench
from tests.helpers.paths import REPO


def test_table_shows_ratio_and_dashes_for_what_was_not_measured() -> None:
    rows = [bench.Row("a", 4), bench.Row("b", None), bench.Row("rss", 2048, "MiB")]
    lines = bench.table(rows, {"a": 2.0, "b": 12.5, "rss": 300.4}, {"a": 10.0}, "abc1234")
    assert lines[0] == ["speed target", "measured", "target", "baseline abc1234", "ratio"]
    assert lines[1] == ["a", "2.00", "4.00", "10.0", "5.0x"]
    assert lines[2] == ["b", "12.5", "-", "-", "-"]
    assert lines[3] == ["rss (MiB)", "300", "2048", "-", "-"]


def test_every_row_is_produced_by_a_workload_and_quick_skips_the_slow_ones() -> None:
    assert len({row.name for row in bench.ROWS}) == len(bench.ROWS)
    quick = bench.selected(argparse.Namespace(quick=True, only=None))
    # the field's baselines are quick rows: each is well under a second
    assert [w.key for w in quick] == [
        "umts-10",
        "umts-100",
        "write",
        "plot",
        "end-to-end",
        "cheap",
    ] + [
        f"field-{agent}"
        for agent in ("sw_ucb", "d_ucb", "cusum_ucb", "glr_klucb", "d_ts", "sw_ts", "bocd_ts")
    ] + [f"latent-ar-{agent}" for agent in ("larl", "larl_etc", "ar_ucb", "rexp3", "kalman_oracle")]
    assert [w.key for w in bench.selected(argparse.Namespace(quick=False, only="movielens"))] == [
        "movielens-umts",
        "movielens-cd_linucb",
        "movielens-cd_lints",
        "movielens-mts",
        "movielens-preset",
    ]


def test_best_of_repeats_short_runs_only(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    assert bench.best_of(calls.append, 3) >= 0 and calls == [0, 1, 2]
    monkeypatch.setattr(bench, "LONG", -1.0)  # every run counts as long
    calls.clear()
    bench.best_of(calls.append, 3)
    assert calls == [0]


def test_csv_rows_are_the_table_unrounded(tmp_path: Path) -> None:
    rows = [bench.Row("a", 4), bench.Row("b", None)]
    path = tmp_path / "bench-x.csv"
    bench.write_csv(path, {"a": 2.0, "b": 1.0}, {"a": 3.0}, rows, {"commit": "x"})
    assert path.read_text().splitlines() == [
        "row,unit,measured,target,baseline,ratio,commit",
        "a,s,2.0,4,3.0,1.5,x",
        "b,s,1.0,,,,x",
    ]


def test_a_later_run_of_the_same_commit_adds_its_rows(tmp_path: Path) -> None:
    path = tmp_path / "bench-x.csv"
    umts, write = bench.ROWS[2], bench.ROWS[4]
    bench.write_csv(path, {write.name: 0.2}, {write.name: 2.0}, [write], {"commit": "x"})
    bench.write_csv(path, {umts.name: 3.0}, {}, [umts], {"commit": "x"})
    bench.write_csv(path, {write.name: 0.25}, {}, [write], {"commit": "x"})
    lines = path.read_text().splitlines()
    expected = [
        f'"{umts.name}",s,3.0,{umts.target:g},,,x',
        f'"{write.name}",s,0.25,{write.target:g},,,x',
    ]
    assert lines[1:] == expected


def test_the_umts_ratio_row_is_end_to_end_over_in_process_and_an_upper_bound() -> None:
    values = {bench.E2E_UMTS: 3.0, "umts N=100, synthetic": 2.5}
    bench.derived(values)
    assert values[bench.E2E_UMTS_RATIO] == pytest.approx(1.2)
    row = next(r for r in bench.ROWS if r.name == bench.E2E_UMTS_RATIO)
    assert row.met(1.19) and not row.met(1.21)
    alone = {bench.E2E_UMTS: 3.0}
    bench.derived(alone)
    assert bench.E2E_UMTS_RATIO not in alone, "no ratio without both rows"


@pytest.fixture(scope="module")
def head_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This repository's HEAD unpacked as the bench unpacks a baseline."""
    tree, sha = bench.export_tree("HEAD", tmp_path_factory.mktemp("trees"))
    assert len(sha) == 7 and tree.name.startswith(sha)
    return tree


def test_an_exported_tree_is_imported_through_pythonpath(head_tree: Path, tmp_path: Path) -> None:
    """PYTHONPATH wins over the editable install, configs included (the conf link)."""
    assert (head_tree / "nslb_cli/conf").is_symlink()
    code = "import nslb_cli, nslb_cli.conf; print(nslb_cli.__file__, *nslb_cli.conf.__path__)"
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env={"PYTHONPATH": str(head_tree)},
        capture_output=True,
        text=True,
    )
    package, conf = done.stdout.split()
    assert Path(package).is_relative_to(head_tree) and Path(conf).is_relative_to(head_tree)
    with pytest.raises(RuntimeError, match="not from"):
        bench.imported_from(head_tree)  # this process imports the repository's own package
    bench.imported_from(REPO)


def test_the_cli_command_runs_the_trees_nslb_with_its_own_entry_points(
    head_tree: Path, tmp_path: Path
) -> None:
    command = bench.cli_command(head_tree)
    done = subprocess.run(
        [*command, "list"],
        cwd=tmp_path,
        env=bench.tree_environment(head_tree, tmp_path / "metadata"),
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert "umts" in done.stdout


@pytest.mark.slow
def test_a_workload_runs_in_a_worker_against_a_tree(head_tree: Path, tmp_path: Path) -> None:
    args = argparse.Namespace(repeats=1, quick=True, movielens=tmp_path / "none")
    write = next(w for w in bench.WORKLOADS if w.key == "write")
    result = bench.measure(write, head_tree, tmp_path / "scratch", args, tmp_path / "cache")
    assert set(result["values"]) == {"write CSVs, 100 seeds x 2000 rounds"}
    missing = next(w for w in bench.WORKLOADS if w.key == "movielens-mts")
    result = bench.measure(missing, head_tree, tmp_path / "scratch", args, tmp_path / "cache")
    assert "no ML-100K folder" in result["skip"]


def test_alternate_runs_each_repeat_as_a_pass_with_the_trees_taking_turns(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Three passes of one run each, current then baseline in every pass; the best kept."""
    seen: list[tuple[str, int]] = []
    readings = iter([5.0, 9.0, 4.0, 8.0, 6.0, 7.0])

    def measure(workload: object, tree: Path, *rest: object) -> dict[str, object]:
        seen.append(("current" if tree == bench.REPO else "baseline", rest[1].repeats))  # type: ignore[attr-defined]
        return {"values": {bench.E2E_START: next(readings)}, "notes": []}

    monkeypatch.setattr(bench, "measure", measure)
    monkeypatch.setattr(bench, "export_tree", lambda ref, out: (tmp_path / "base", "base123"))
    monkeypatch.setattr(bench, "commit_label", lambda: "cur456")
    args = bench.parser().parse_args(
        ["--only", "^end-to-end$", "--repeats", "3", "--alternate", "--out", str(tmp_path)]
    )
    bench.run(args)
    assert seen == [("current", 1), ("baseline", 1)] * 3
    row = next(line for line in capsys.readouterr().out.splitlines() if "start-up" in line)
    assert row.split()[-4:] == ["4.00", "0.50", "7.00", "1.8x"]
