"""A study is a writer like a run: the previous study's record (trials, ``best.yaml``,
``optimization_results.yaml``) stays until a new study of the same world has finished trials
to replace it, as one step; a stopped study leaves the best of the trials it finished; a
study or a storage of another world is refused; a bad or a shared storage is one line."""

from __future__ import annotations

import importlib.util
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import optuna
import pytest
import yaml

from nslb_cli.common.errors import ConfigError
from nslb_cli.runner import study
from nslb_cli.store.folder import BEST_FILE, STUDY_FILE, OutputConflict
from tests.helpers.cli import NSLB, nslb, said
from tests.runner.test_study import WORLD, plan_of, write_trial

STUDY = ["hparams_search=cd_ucb", "env.horizon=50", "run.n_seeds=2", "run.progress=false"]
TUNED = "outputs/tune/cd_ucb"


def _record(folder: Path) -> dict[str, bytes]:
    """What a study's record holds: its trials, best.yaml and the results file."""
    files = [folder / BEST_FILE, folder / STUDY_FILE, *sorted((folder / study.FOLDER).iterdir())]
    return {path.relative_to(folder).as_posix(): path.read_bytes() for path in files}


def _agree(folder: Path) -> dict[str, Any]:
    """best.yaml, checked against the results file and the trials recorded: one best."""
    best = yaml.safe_load((folder / BEST_FILE).read_text())
    results = yaml.safe_load((folder / STUDY_FILE).read_text())
    trials = study.finished_trials(folder / study.FOLDER)
    top = min(trials, key=lambda t: (t["objective"], t["trial"]))
    assert best["objective"] == results["best_value"] == top["objective"]
    assert results["best_params"] == top["params"]
    assert all(f"{k}={v}" in best["overrides"] for k, v in top["params"].items())
    return best  # type: ignore[no-any-return]


@pytest.fixture
def finished(tmp_path: Path) -> Path:
    """A folder with the record of a finished study: trials 0 (12.5) and 1 (30)."""
    for number, value in enumerate([12.5, 30.0]):
        write_trial(tmp_path, number, value)
    study.finish(tmp_path)
    return tmp_path


def test_a_new_study_keeps_the_previous_record_until_it_has_finished_trials(
    finished: Path,
) -> None:
    before = _record(finished)
    study.start(finished, plan_of())  # the new study begins: nothing of the old one goes
    assert _record(finished) == before
    write_trial(finished, 0, None)  # its only trial fails
    assert study.finish(finished).endswith(f"the previous study's {finished / BEST_FILE} stays")
    assert _record(finished) == before
    _agree(finished)


def test_a_new_study_with_finished_trials_replaces_the_whole_record(finished: Path) -> None:
    study.start(finished, plan_of())
    write_trial(finished, 0, 40.0)
    study.finish(finished)
    assert [t["objective"] for t in study.finished_trials(finished / study.FOLDER)] == [40.0]
    assert _agree(finished)["objective"] == 40.0
    assert not (finished / study.NEXT).exists()


def test_the_results_file_is_rewritten_to_agree_with_best_yaml(finished: Path) -> None:
    """Whatever wrote the results file last (Hydra's Optuna sweeper wrote its own, from every
    trial in its storage, even when this run finished none), it ends naming best.yaml's trial."""
    study.start(finished, plan_of())
    (finished / STUDY_FILE).write_text("name: optuna\nbest_params: {agent.tau: 2}\nbest_value: 1\n")
    study.finish(finished)
    _agree(finished)


def test_a_swap_a_kill_cut_short_is_finished_by_the_next_study(
    finished: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    study.start(finished, plan_of())
    write_trial(finished, 0, 3.0)
    real = study.shutil.rmtree

    def killed(path: Any, *args: Any, **kwargs: Any) -> None:
        raise KeyboardInterrupt  # as a kill would, after best.yaml is in, before the trials

    monkeypatch.setattr(study.shutil, "rmtree", killed)
    with pytest.raises(KeyboardInterrupt):
        study.finish(finished)
    monkeypatch.setattr(study.shutil, "rmtree", real)
    study.start(finished, plan_of())
    assert _agree(finished)["objective"] == 3.0


def test_a_study_of_another_world_is_refused_and_the_first_kept(finished: Path) -> None:
    before = _record(finished)
    with pytest.raises(OutputConflict, match=r"another world \(differs in: env.sigma\)"):
        study.start(finished, plan_of(world={**WORLD, "env.sigma": 0.5}))
    assert _record(finished) == before and not (finished / study.NEXT).exists()


def test_the_trials_record_the_values_of_keys_tuned_on_the_command_line(tmp_path: Path) -> None:
    study.start(tmp_path, plan_of(tuned=["agent.gamma", "agent.tau"]))
    study.record_trial(tmp_path, 0, ["agent.tau=4", "agent.gamma=0.5", "env.horizon=50"],
                       {"agent.tau"}, "cum_regret", None)  # fmt: skip
    (record,) = (tmp_path / study.NEXT).glob("0.json")
    assert yaml.safe_load(record.read_text())["params"] == {"agent.tau": 4, "agent.gamma": 0.5}


def test_a_stopped_study_leaves_the_best_of_the_trials_it_finished(tmp_path: Path) -> None:
    process = subprocess.Popen(
        [NSLB, "run", *STUDY, "hydra.sweeper.n_trials=1000"],
        cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    running = tmp_path / TUNED / study.NEXT
    while len(study.finished_trials(running)) < 2:
        assert process.poll() is None, process.communicate()[1]
        time.sleep(0.05)
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 128 + signal.SIGTERM and "Traceback" not in stderr, stderr
    assert said(stderr)[-2:] == [
        f"nslb: the best trial's overrides are in {TUNED}/{BEST_FILE}",
        "nslb: terminated",
    ]
    assert len(study.finished_trials(tmp_path / TUNED / study.FOLDER)) >= 2
    _agree(tmp_path / TUNED)


@pytest.mark.slow
def test_a_study_of_another_world_into_the_same_folder_is_one_line(tmp_path: Path) -> None:
    assert nslb("run", *STUDY, "hydra.sweeper.n_trials=2", cwd=tmp_path).returncode == 0
    before = _record(tmp_path / TUNED)
    other = nslb("run", *STUDY, "hydra.sweeper.n_trials=2", "env.sigma=0.3", cwd=tmp_path)
    assert other.returncode == 2 and len(said(other.stderr)) == 1, other.stderr
    assert "holds the study of another world (differs in: env.sigma)" in other.stderr
    assert _record(tmp_path / TUNED) == before


def test_a_storage_holding_a_study_of_another_world_refuses_it(tmp_path: Path) -> None:
    """Optuna's sampler would learn from the other world's trials."""
    url = f"sqlite:///{tmp_path / 'study.db'}"
    study.start(tmp_path / "a", plan_of(storage=url, name="cd_ucb"))
    other = plan_of(storage=url, name="cd_ucb", world={**WORLD, "env.sigma": 0.5})
    with pytest.raises(ConfigError, match="study 'cd_ucb' in sqlite:///.* another world"):
        study.start(tmp_path / "b", other)
    assert not (tmp_path / "b").exists()
    study.start(tmp_path / "c", plan_of(storage=url, name="cd_ucb"))  # the same world


@pytest.mark.slow
def test_a_storage_shared_with_another_world_is_refused(tmp_path: Path) -> None:
    """The refusal above, through ``nslb run``: one line, and no trial of the other runs."""
    url = f"sqlite:///{tmp_path / 'study.db'}"
    first = nslb("run", *STUDY, "hydra.sweeper.n_trials=2", f"hydra.sweeper.storage={url}",
                 cwd=tmp_path)  # fmt: skip
    assert first.returncode == 0, first.stderr
    other = nslb("run", *STUDY, "hydra.sweeper.n_trials=2", f"hydra.sweeper.storage={url}",
                 "env.sigma=0.3", "name=other", cwd=tmp_path)  # fmt: skip
    assert other.returncode == 2 and len(said(other.stderr)) == 1, other.stderr
    assert "study 'cd_ucb' in sqlite:///" in other.stderr and "another world" in other.stderr
    assert len(optuna.load_study(study_name="cd_ucb", storage=url).trials) == 2
    assert not list((tmp_path / "outputs/other").rglob("*.json")), "no trial ran"


def _bad_storages(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "not-a-database.db").write_text("a text file\n" * 100)
    storages = {
        f"sqlite:///{tmp_path}/missing/folder/study.db": "unable to open database file",
        "nosuchdialect://somewhere/study": "Can't load plugin: sqlalchemy.dialects:nosuchdialect",
        f"sqlite:///{tmp_path}/not-a-database.db": "file is not a database",
        "study.db": "Could not parse SQLAlchemy URL",
    }
    if not any(importlib.util.find_spec(driver) for driver in ("psycopg", "psycopg2")):
        # SQLAlchemy's default PostgreSQL driver: psycopg2 before 2.1, psycopg (3) since
        storages["postgresql://me@localhost/studies"] = "No module named 'psycopg"
    return storages


def test_a_bad_storage_is_one_line_naming_it(tmp_path: Path) -> None:
    for url, reason in _bad_storages(tmp_path).items():
        with pytest.raises(ConfigError) as refused:
            study.start(tmp_path, plan_of(storage=url, name="cd_ucb"))
        message = str(refused.value)
        assert message.startswith(f"hydra.sweeper.storage: cannot open {url} ({reason}")
        assert "\n" not in message and not (tmp_path / study.NEXT).exists()
    done = nslb("run", *STUDY, "hydra.sweeper.storage=nosuchdialect://x/y", cwd=tmp_path)
    assert done.returncode == 2 and len(said(done.stderr)) == 1, done.stderr


def test_studies_started_together_on_a_fresh_storage_all_open_it(tmp_path: Path) -> None:
    """Each would make the database's tables at once: "table … already exists". The
    processes import all first, then open the storage at one signal."""
    url, go = f"sqlite:///{tmp_path / 'shared.db'}", tmp_path / "go"
    script = (
        "import sys, time, optuna; from pathlib import Path; from nslb_cli.runner import study\n"
        f"plan = study.Plan('cd_ucb', 2, '', {url!r}, sys.argv[1], [], {WORLD!r})\n"
        "print('ready', flush=True)\n"
        f"while not Path({str(go)!r}).exists(): time.sleep(0.001)\n"
        "study.start(Path(sys.argv[1]), plan)"
    )
    root = Path(__file__).resolve().parents[2]
    starts = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(tmp_path / f"s{n}")],
            cwd=root,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        for n in range(4)
    ]
    assert [p.stdout.readline() for p in starts if p.stdout] == ["ready\n"] * 4
    go.touch()
    errors = [p.communicate(timeout=120)[1] for p in starts]
    assert [p.returncode for p in starts] == [0] * 4, errors
    assert len(optuna.study.get_all_study_summaries(url)) == 4
