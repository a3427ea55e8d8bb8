"""Nothing a user types ends in a traceback: one line ``nslb: error: …``, exit status 2,
before any job starts (issue 9's table)."""

from __future__ import annotations

from pathlib import Path

import pytest

from nslb_cli.cli import main
from tests.helpers.cli import nslb
from tests.helpers.movielens import tiny_env_params

HOME_MISSING = "~/surely-not-a-folder-of-nslb"


def cases(tmp: Path) -> list[tuple[list[str], str]]:
    """(arguments, a fragment the one line must contain); ``tmp`` holds a file and a folder.

    Each row ends with the argument at fault (see :func:`named_key`)."""
    a_file, empty = tmp / "a_file", tmp / "empty"
    ml = ["env=movielens", f"env.data_dir={empty}", f"env.cache_dir={tmp / 'cache'}"]
    return [
        (["run", "hydra.run.dir=/proc/nope"], "hydra.run.dir: cannot write /proc/nope"),
        (["run", f"hydra.run.dir={a_file}/x"], "is a file, not a folder"),
        (["run", "-m", "agent=mts,random", f"hydra.sweep.dir={a_file}/x"], "hydra.sweep.dir"),
        (["run", "agent.num_particles=[1,2"], "cannot parse 'agent.num_particles=[1,2'"),
        (["run", "env.horizon=${oops"], "cannot parse 'env.horizon=${oops'"),
        (["run", "=5"], "'=5' has no key"),
        (["run", "env.sigma=(0.5"], "cannot parse 'env.sigma=(0.5'"),
        (["run", "env=movielens", f"env.data_dir={HOME_MISSING}"], f"{Path.home()}/surely-not"),
        (["run", "agent=umts", "agent.num_particles=10000000000000"], "lower agent.num_particles"),
        (["run", "env.horizon=100000000000"], "lower env.horizon"),
        (["run", "agent=[mts,umts]"], "sweep with -m agent=mts,umts"),
        (["run", *ml, "agent=cd_ucb"], "cd_ucb learns each arm's rewards"),
        (["run", *ml, "agent=cd_ts"], "cd_ts learns each arm's rewards"),
        (["run", *ml, "agent=exp3s"], "exp3s learns each arm's rewards"),
        (["run", "agent=mts", *ml, "env.n_arms=100000"], "lower env.horizon, env.n_arms"),
        (["run", "env=movielens", "env.release=ml-7m"], "env.release"),
        (["run", "env=nowhere"], "Could not find 'env/nowhere'"),
        (["run", "agent=nobody"], "Could not find 'agent/nobody'"),
        (["run", "agent=umts", "agent.num_particles=0"], "agent.num_particles: must be > 0"),
        (["run", "+agent.typo=1"], "agent.typo: unknown key"),
        (["run", "+typo=1"], "typo: unknown top-level key"),
        (["run", "agent=cd_ucb", "agent.taux=3"], "unknown key for agent 'cd_ucb' (did you mean"),
        (["run", "env.horizn=5"], "env.horizn: unknown key for env 'synthetic'"),
        (["run", "env.horizon=200", "~env.horizon"], "deletes a setting"),
        (["run", "-m", "agent=cd_ucb", "agent.taux=3,4"], "unknown key for agent 'cd_ucb' (did"),
        (["run", "run.n_sed=3"], "unknown key for run (did you mean run.n_seeds?)"),
        (["run", "env.horizon=-10"], "env.horizon: must be > 0"),
        (["run", "env.sigma=0"], "env.sigma: must be >="),
        (["run", "env.switch_prob=2"], "env.switch_prob: must be in [0, 1]"),
        (["run", "env.dynamics=sometimes"], "env.dynamics: must be one of"),
        (["run", "run.n_seeds=0"], "run.n_seeds: must be > 0"),
        (["run", "run.batch_size=0"], "run.batch_size: must be > 0"),
        (["run", "run.overwrite=maybe"], "run.overwrite"),
        (["run", "name=../escape"], "name: must be folder names"),
        (["run", "-m", "agent=umts", "agent.num_particles=10,-5"], "(in sweep job"),
        (["run", "-m", "agent=cd_ucb,cd_ts", "agent.gamma=0.1"], "write ++agent.gamma=0.1"),
        (
            ["run", "-m", "agent=mts,cd_ts", "++agent.gamma=0.1"],
            "gamma: unknown key for agent 'mts'",
        ),
        (["run", "experiment/paper=fixed"], "write experiment=paper/fixed"),
        (
            ["run", "experiment=paper/known", "hydra.sweeper.params.agent=mts,random"],
            "sweep agent=mts,random instead",
        ),
        (["run", "-m", "hydra.job.name=a,b"], "sweeps one of Hydra's own settings"),
        (["run", "engine=jax"], "not a top-level key: write run.engine=jax"),
        (["run", "-m", "horizon=3,4"], "not a top-level key: write env.horizon=3,4"),
        (["run", "run.n_seeds=3,4"], "a run has one: to run each, sweep with -m run.n_seeds=3,4"),
        (["run", "agent=umts", "num_particles=5"], "write agent.num_particles=5"),
        (["data", "prepare", f"env.data_dir={HOME_MISSING}"], f"{Path.home()}/surely-not"),
        (["data", "prepare", "env.sigma=(0.5"], "cannot parse 'env.sigma=(0.5'"),
        (["data", "prepare", "agent=mts"], "expected env.key=value"),
        (["data", "frobnicate"], "unknown command 'frobnicate'"),
        (["fly"], "unknown command 'fly'"),
    ]


def named_key(arguments: list[str]) -> str:
    """What the one line must name: the key of the row's last argument, the one at fault
    (``+agent.typo=1`` -> ``agent.typo``); a command word, or ``=5``, which has no key, as
    it is."""
    key = arguments[-1].split("=", 1)[0].lstrip("+")
    return key if "=" in arguments[-1] and key else arguments[-1]


def test_the_tables_thirty_bad_inputs_are_each_refused_naming_the_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The README's promise for each of the table's (at least thirty, distinct) bad inputs:
    refused before anything runs, in one line (``nslb: error: …``, exit status 2) that names
    the key at fault, as in ``nslb: error: agent.num_particles: must be > 0, got -5``."""
    (tmp_path / "a_file").write_text("")
    (tmp_path / "empty").mkdir()
    monkeypatch.chdir(tmp_path)
    table = cases(tmp_path)
    assert len(table) >= 30
    assert len({tuple(arguments) for arguments, _ in table}) == len(table), "no row twice"
    for arguments, _ in table:
        with pytest.raises(SystemExit) as stopped:
            main(arguments)
        err = capsys.readouterr().err
        assert stopped.value.code == 2 and err.count("\n") == 1, (arguments, err)
        assert err.startswith("nslb: error: "), (arguments, err)
        assert named_key(arguments) in err.removeprefix("nslb: error: "), (arguments, err)
    assert not (tmp_path / "outputs").exists(), "refused before any job started"


@pytest.mark.parametrize("index", range(len(cases(Path("/x")))))
def test_bad_input_is_one_line_and_exit_status_2(
    index: int, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a_file").write_text("")
    (tmp_path / "empty").mkdir()
    monkeypatch.chdir(tmp_path)
    arguments, fragment = cases(tmp_path)[index]
    with pytest.raises(SystemExit) as stopped:
        main(arguments)
    err = capsys.readouterr().err
    assert stopped.value.code == 2, err
    assert err.count("\n") == 1 and err.startswith("nslb: error: "), err
    assert "Traceback" not in err
    assert fragment in err
    assert not (tmp_path / "outputs").exists(), "refused before any job started"


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small results tree (mts and random, 2 seeds of 50 rounds) and a file beside it."""
    root = tmp_path_factory.mktemp("plot")
    for agent in ("mts", "random"):
        done = nslb("run", f"agent={agent}", "env.horizon=50", "run.n_seeds=2", cwd=root)
        assert done.returncode == 0, done.stderr
    (root / "a_file").write_text("")
    return root


PLOT_CASES = [
    (["--out", "/proc/nope"], "--out: cannot write /proc/nope"),
    (["--out", "a_file"], "--out: cannot write a_file"),
    (["--out", ""], "--out: empty"),
    (["--agents", ""], "--agents: empty"),
    (["--agents", "nobody"], "--agents: no results for nobody"),
    (["--rounds", ":99999"], "--rounds: END 99999 is past the last round of the results (50)"),
    (["--rounds", "x:y"], "--rounds: expected START:END"),
    (
        ["--reference", "nonexistent"],
        "--reference: 'nonexistent' names no agent in group 'default' (there: mTS, Random)",
    ),
    (["--metric", "speed"], "--metric: unknown"),
    (["--format", "doc"], "--format: unsupported"),
]


@pytest.mark.parametrize(("extra", "fragment"), PLOT_CASES, ids=[c[1][:20] for c in PLOT_CASES])
def test_bad_plot_input_is_one_line_and_exit_status_2(
    extra: list[str], fragment: str, results: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.chdir(results)
    with pytest.raises(SystemExit) as stopped:
        main(["plot", "outputs", *extra])
    err = capsys.readouterr().err
    assert stopped.value.code == 2, err
    assert err.count("\n") == 1 and err.startswith("nslb: error: ") and fragment in err, err


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [
        (["env.n_states=400"], "env.n_states: 400 states with stay=0.9975"),
        (["env.rank=25"], "env.rank: rank 25 is too large for the 60 users x 40 movies"),
    ],
)
def test_movielens_sizes_name_the_key_to_change(
    extra: list[str], fragment: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    p = tiny_env_params(tmp_path, horizon=20)
    monkeypatch.chdir(tmp_path)
    arguments = [
        "run", "env=movielens", f"env.data_dir={p.data_dir}", f"env.cache_dir={p.cache_dir}",
        "env.min_user_ratings=1", "env.min_item_ratings=1", "run.n_seeds=1", *extra,
    ]  # fmt: skip
    with pytest.raises(SystemExit) as stopped:
        main(arguments)
    err = capsys.readouterr().err
    assert stopped.value.code == 2 and err.count("\n") == 1 and fragment in err, err
