"""Nothing a user types ends in a traceback: one line ``nslb: error: …``, exit status 2,
before any job starts (a few of each kind here; every bad command line of issue 9's table
is refused in process by ``tests/runner/test_compose.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from nslb_cli.cli import main
from tests.helpers.cli import nslb
from tests.helpers.movielens import tiny_env_params


def cases(tmp: Path) -> list[tuple[list[str], str]]:
    """(arguments, a fragment the one line must contain): one or two a kind of refusal (the
    runner's table, ``tests/runner/test_compose.py``, has every bad command line); ``tmp``
    holds an empty folder."""
    ml = ["env=movielens", f"env.data_dir={tmp / 'empty'}", f"env.cache_dir={tmp / 'cache'}"]
    return [
        (["run", "hydra.run.dir=/proc/nope"], "hydra.run.dir: cannot write /proc/nope"),
        (["run", "env.sigma=(0.5"], "cannot parse 'env.sigma=(0.5'"),
        (["run", "env=nowhere"], "Could not find 'env/nowhere'"),
        (["run", "agent=cd_ucb", "agent.taux=3"], "unknown key for agent 'cd_ucb' (did you mean"),
        (["run", "engine=jax"], "not a top-level key: write run.engine=jax"),
        (["run", "-m", "agent=cd_ucb,cd_ts", "agent.gamma=0.1"], "write ++agent.gamma=0.1"),
        (["run", "agent=umts", "agent.num_particles=-5"], "agent.num_particles: must be > 0"),
        (["run", *ml, "agent=cd_ucb"], "cd_ucb learns each arm's rewards"),
        (["run", "env.horizon=100000000000"], "lower env.horizon"),
        (["run", "-m", "agent=umts", "agent.num_particles=10,-5"], "(in sweep job"),
        (["run", "-m", "agent=mts,cd_ts", "++agent.gamma=0.1"], "unknown key for agent 'mts'"),
        (["data", "prepare", "env.sigma=(0.5"], "cannot parse 'env.sigma=(0.5'"),
        (["data", "prepare", "agent=mts"], "expected env.key=value"),
        (["data", "frobnicate"], "unknown command 'frobnicate'"),
        (["fly"], "unknown command 'fly'"),
    ]


@pytest.mark.parametrize("index", range(len(cases(Path("/x")))))
def test_bad_input_is_one_line_and_exit_status_2(
    index: int, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Refused before anything runs (the sweeps' jobs by nslb's sweeper, inside Hydra), in
    one line ``nslb: error: …`` on stderr, exit status 2, no traceback."""
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
    (
        ["--reference", "nonexistent"],
        "--reference: 'nonexistent' names no agent in group 'default' (there: mTS, Random)",
    ),
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
