"""`nslb check`: one line per check, exit status 1 on a failure, 2 on bad input."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nslb_cli.agents import GROUP
from nslb_cli.cli import main
from tests.helpers.paths import REPO
from tests.helpers.plugins import fake_distribution, nslb_with


@pytest.mark.slow  # tests/test_api.py holds the guide's whole output; the next test a label
def test_check_prints_one_line_per_check(capsys: pytest.CaptureFixture[str]) -> None:
    main(["check", "agent=umts", "agent.num_particles=20", "env.horizon=80"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[1:3] == [
        "  synthetic (dynamics=fixed, horizon=80, period=40)",
        "  synthetic (model=prior, horizon=80, switch_prob=0.02)",
    ]
    assert [line.split()[0] for line in lines[3:-1]] == ["pass"] * 10, "9 and the engines'"
    assert lines[-2].startswith("pass  engines")
    assert lines[-1] == "all 10 checks passed"


def test_check_on_another_environment(capsys: pytest.CaptureFixture[str]) -> None:
    main(["check", "agent=cd_ucb", "env=synthetic", "env.horizon=50", "env.n_arms=3"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[1] == "  synthetic (n_arms=3, horizon=50)", "that environment alone"
    assert lines[2].startswith("pass  runs")


@pytest.mark.slow  # test_conformance checks every agent on Bernoulli settings; this adds the label
def test_check_with_bernoulli_rewards(capsys: pytest.CaptureFixture[str]) -> None:
    main(["check", "agent=cd_ts", "env.reward=bernoulli", "env.horizon=60"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[1] == "  synthetic (dynamics=fixed, reward=bernoulli, horizon=60, period=40)"
    assert lines[-1] == "all 10 checks passed"


BAD_INPUT = [
    ([], "usage: nslb check agent=NAME"),
    (["env.horizon=50"], "say which agent to check: nslb check agent=NAME"),
    (["agent=nobody"], "overrides: Could not find 'agent/nobody' (available: "),
    (["agent=umts", "agent.num_particles=0"], "agent.num_particles: must be > 0, got 0"),
    (["agent=umts", "agent.num_particles=5,10"], "nslb check runs one configuration"),
    (
        ["agent=mts", "env=movielens", "env.reward=bernoulli"],
        "env.reward: movielens rewards are ratings with Gaussian noise, not 'bernoulli'",
    ),
]


def test_bad_input_is_one_line_with_status_2(capsys: pytest.CaptureFixture[str]) -> None:
    for args, message in BAD_INPUT:
        with pytest.raises(SystemExit) as exited:
            main(["check", *args])
        assert exited.value.code == 2, args
        error = capsys.readouterr().err
        assert error.startswith(f"nslb: error: {message}") and error.count("\n") == 1, error


def test_data_that_cannot_be_read_is_one_line_with_status_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The world is built inside the checks: a folder without ratings is refused as
    ``nslb run`` refuses it, not with a traceback."""
    with pytest.raises(SystemExit) as exited:
        main(["check", "agent=mts", "env=movielens", f"env.data_dir={tmp_path}"])
    assert exited.value.code == 2
    error = capsys.readouterr().err
    assert error.startswith(f"nslb: error: env.data_dir: {tmp_path}: no ratings file found")
    assert error.count("\n") == 1


def test_a_failing_agent_exits_with_status_1(tmp_path: Path) -> None:
    """A plugin whose agent draws from NumPy's global generator (tests' faulty agents)."""
    faulty = {"faulty": "tests.helpers.faulty_agents:GlobalRandom"}
    fake_distribution(tmp_path / "site", "faulty-plugin", "0.1", {GROUP: faulty})
    path = os.pathsep.join([str(tmp_path / "site"), str(REPO)])
    checked = nslb_with(path, "check", "agent=faulty", cwd=tmp_path)
    assert checked.returncode == 1
    lines = checked.stdout.splitlines()
    assert lines[0].startswith("nslb check: agent 'faulty' (faulty-plugin 0.1)")
    assert lines[5].startswith(
        "FAIL  determinism             synthetic (dynamics=fixed, horizon=120, period=40): "
        "two runs of the same seeds differ"
    )
    assert lines[-1] == "2 of 9 checks failed, 0 not checked"


def test_a_plugin_that_allocates_far_more_than_it_declares_fails_in_one_line(
    tmp_path: Path,
) -> None:
    """A plugin agent that keeps 32 MB for the checks' four runs and declares nothing (the
    default says a few KiB): only the memory check fails, in one line."""
    hoarder = {"hoarder": "tests.runner.test_conformance:Hoarder"}
    fake_distribution(tmp_path / "site", "hoarder-plugin", "0.1", {GROUP: hoarder})
    path = os.pathsep.join([str(tmp_path / "site"), str(REPO)])
    checked = nslb_with(path, "check", "agent=hoarder", cwd=tmp_path)
    assert checked.returncode == 1
    failed = [line for line in checked.stdout.splitlines() if line.startswith("FAIL")]
    assert len(failed) == 1 and failed[0].startswith(
        "FAIL  memory                  synthetic (dynamics=fixed, horizon=120, period=40): "
        "memory(params, sizes) declares 2400 bytes for 4 runs of 120 rounds, but they allocated "
        "320"
    )
    assert checked.stdout.splitlines()[-1] == "1 of 9 checks failed, 0 not checked"
