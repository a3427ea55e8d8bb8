"""Optuna studies: trials recorded with the job's objective, best.yaml taken back by `nslb run`."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
import yaml

from nslb_cli.common.validators import ConfigError
from nslb_cli.runner import study
from nslb_cli.store.folder import BEST_FILE
from tests.helpers.cli import nslb

CONF = Path(__file__).resolve().parents[2] / "conf"

STUDY = ["hparams_search=cd_ucb", "env.horizon=120", "run.n_seeds=3", "hydra.sweeper.n_trials=4"]


def _trial(folder: Path, number: int, objective: float | None, direction: str = "minimize") -> None:
    study.record_trial(
        folder,
        number,
        [
            f"agent.tau={10 * (number + 1)}",
            "hparams_search=cd_ucb",
            "run.seed=1000",
            "env.sigma=0.3",
        ],
        {"agent.tau"},
        "cum_regret" if direction == "minimize" else "cum_reward",
        objective,
    )


def test_the_best_trial_is_the_lowest_regret_and_failed_trials_never_win(tmp_path: Path) -> None:
    for number, value in enumerate([30.0, None, 12.5, 40.0]):
        _trial(tmp_path, number, value)
    record = json.loads((tmp_path / ".nslb-study/2.json").read_text())
    assert record["params"] == {"agent.tau": 30} and record["direction"] == "minimize"
    best = yaml.safe_load(study.write_best(tmp_path, "cd_ucb").read_text())  # type: ignore[union-attr]
    # the study's own keys and its tuning seeds are left out; the agent is named
    assert best["overrides"] == ["agent=cd_ucb", "agent.tau=30", "env.sigma=0.3"]
    assert best["objective"] == 12.5


def test_a_reward_study_keeps_the_highest(tmp_path: Path) -> None:
    for number, value in enumerate([30.0, 12.5, 40.0]):
        _trial(tmp_path, number, value, direction="maximize")
    best = yaml.safe_load(study.write_best(tmp_path, "cd_ucb").read_text())  # type: ignore[union-attr]
    assert best["objective"] == 40.0 and "agent.tau=30" in best["overrides"]


def test_no_finished_trial_writes_no_best(tmp_path: Path) -> None:
    _trial(tmp_path, 0, None)
    assert study.write_best(tmp_path, "cd_ucb") is None
    assert not (tmp_path / BEST_FILE).exists()


def test_a_best_file_expands_to_its_overrides_before_the_later_arguments(tmp_path: Path) -> None:
    best = tmp_path / "best.yaml"
    best.write_text(yaml.safe_dump({"overrides": ["agent=cd_ucb", "agent.tau=30"]}))
    # a key set later is dropped from the file's: one value, one folder name
    assert study.expand_best(["-m", str(best), "agent.tau=40"]) == [
        "-m",
        "agent=cd_ucb",
        "agent.tau=40",
    ]


@pytest.mark.parametrize(
    ("content", "message"),
    [(None, "no such file"), ("- a\n- b\n", "no 'overrides' list"), ("a: [\n", "cannot be read")],
)
def test_a_bad_best_file_is_one_error_naming_it(
    tmp_path: Path, content: str | None, message: str
) -> None:
    path = tmp_path / "best.yaml"
    if content is not None:
        path.write_text(content)
    with pytest.raises(ConfigError, match=message) as caught:
        study.expand_best([str(path)])
    assert "\n" not in str(caught.value)


def test_a_study_records_each_trial_s_mean_final_regret_and_reruns_its_best(
    tmp_path: Path,
) -> None:
    done = nslb("run", *STUDY, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    sweep = tmp_path / "outputs/tune/cd_ucb"
    space = yaml.safe_load((CONF / "hparams_search/cd_ucb.yaml").read_text())
    low, high = map(int, re.findall(r"\d+", space["hydra"]["sweeper"]["params"]["agent.tau"])[:2])
    trials = [json.loads(p.read_text()) for p in sorted((sweep / ".nslb-study").glob("*.json"))]
    assert len(trials) == 4
    for trial in trials:
        tau = trial["params"]["agent.tau"]
        assert low <= tau <= high and tau % 2 == 0
        folder = next((sweep / "synthetic/cd_ucb").glob(f"agent.tau={tau},*"))
        seeds = sorted(folder.glob("seed=*.csv"))
        # the tuning seeds, apart from the evaluation seeds 0, 1, …
        assert [p.name for p in seeds] == ["seed=1000.csv", "seed=1001.csv", "seed=1002.csv"]
        finals = [pd.read_csv(p)["cum_regret"].iloc[-1] for p in seeds]
        assert trial["objective"] == pytest.approx(sum(finals) / 3, rel=1e-9)
    best = yaml.safe_load((sweep / "best.yaml").read_text())
    assert best["objective"] == min(t["objective"] for t in trials)
    # the best trial's overrides, rerun on its tuning seeds, give the same results
    tau = next(o for o in best["overrides"] if o.startswith("agent.tau="))
    again = nslb(
        "run",
        str(sweep / "best.yaml"),
        "run.seed=1000",
        "run.n_seeds=3",
        f"hydra.run.dir={tmp_path / 'again'}",
        cwd=tmp_path,
    )
    assert again.returncode == 0, again.stderr
    original = next((sweep / "synthetic/cd_ucb").glob(f"{tau},*"))
    for seed in (1000, 1001, 1002):
        name = f"seed={seed}.csv"
        assert (tmp_path / "again" / name).read_bytes() == (original / name).read_bytes()


def test_a_seeded_study_proposes_the_same_trials_again(tmp_path: Path) -> None:
    runs = []
    for where in ("a", "b"):
        folder = tmp_path / where
        folder.mkdir()
        assert nslb("run", *STUDY, "env.horizon=40", cwd=folder).returncode == 0
        records = sorted((folder / "outputs/tune/cd_ucb/.nslb-study").glob("*.json"))
        runs.append([json.loads(p.read_text())["params"] for p in records])
    assert runs[0] == runs[1] and len({str(p) for p in runs[0]}) > 1


def test_a_study_over_a_list_of_agents_is_refused_in_one_line(tmp_path: Path) -> None:
    done = nslb("run", "hparams_search=cd_ucb", "experiment=paper/fixed", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "a study tunes one agent" in done.stderr


def test_a_study_checks_the_ends_of_its_search_space_before_any_trial(tmp_path: Path) -> None:
    done = nslb("run", "hparams_search=cd_ucb", "agent.tau=range(9,20)", cwd=tmp_path)
    assert done.returncode == 2 and "agent.tau" in done.stderr and "even" in done.stderr
    assert not (tmp_path / "outputs").exists()


def test_best_yaml_leaves_out_how_the_study_ran(tmp_path: Path) -> None:
    """Replayed, these would put evaluation seeds beside the tuning seeds (``name``), or
    delete evaluation seeds on the next rerun (``run.overwrite``)."""
    overrides = ["agent.tau=30", "hparams_search=cd_ucb", "name=mytune", "run.overwrite=true",
                 "run.fail_fast=true", "hydra.sweeper.n_trials=5", "env.sigma=0.3"]  # fmt: skip
    study.record_trial(tmp_path, 0, overrides, {"agent.tau"}, "cum_regret", 1.0)
    best = yaml.safe_load(study.write_best(tmp_path, "cd_ucb").read_text())  # type: ignore[union-attr]
    assert best["overrides"] == ["agent=cd_ucb", "agent.tau=30", "env.sigma=0.3"]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["-m", "hparams_search=cd_ucb,cd_ts"], "one study at a time"),
        (["hparams_search=cd_ucb", "hydra.sweeper.n_jobs=0"], "hydra.sweeper.n_jobs"),
        (["hparams_search=cd_ucb", "hydra.sweeper.n_trials=0"], "hydra.sweeper.n_trials"),
    ],
)
def test_a_study_that_cannot_run_is_one_line(
    tmp_path: Path, arguments: list[str], message: str
) -> None:
    done = nslb("run", *arguments, cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and message in done.stderr
    assert not (tmp_path / "outputs").exists()


def test_a_study_none_of_whose_trials_finished_says_so_in_its_summary(tmp_path: Path) -> None:
    # the ends 2 and 4 are valid windows; the one trial (seeded) draws 3, which is not even
    done = nslb("run", *STUDY, "hydra.sweeper.n_trials=1", "agent.tau=range(2,4)", cwd=tmp_path)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert "no trial of the study finished" in done.stderr
    assert "agent.tau: must be a positive even integer" in done.stderr
    assert not (tmp_path / "outputs/tune/cd_ucb/best.yaml").exists()


def test_a_single_run_with_the_optuna_sweeper_is_a_plain_run(tmp_path: Path) -> None:
    done = nslb("run", *STUDY, "hydra.mode=RUN", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert not list(tmp_path.rglob(".nslb-study")) and not list(tmp_path.rglob("best.yaml"))


def test_a_damaged_trial_record_is_left_out_of_the_choice(tmp_path: Path) -> None:
    """A record cut by a kill (or any damage) cannot win, nor stop the others from counting."""
    for number, value in enumerate([30.0, 12.5]):
        _trial(tmp_path, number, value)
    (tmp_path / study.FOLDER / "2.json").write_text('{"trial": 2, "objective": 1')  # cut
    (tmp_path / study.FOLDER / "3.json").write_text("[1, 2]\n")  # not a record
    assert [t["trial"] for t in study.finished_trials(tmp_path)] == [0, 1]
    best = yaml.safe_load(study.write_best(tmp_path, "cd_ucb").read_text())  # type: ignore[union-attr]
    assert best["objective"] == 12.5


def test_a_study_kept_in_a_database_runs_and_its_trials_are_in_it(tmp_path: Path) -> None:
    """Optuna's database storage (``hydra.sweeper.storage``): the study runs, and the
    database holds its trials, each with the objective nslb recorded for it."""
    import optuna

    url = f"sqlite:///{tmp_path / 'study.db'}"
    done = nslb("run", *STUDY, f"hydra.sweeper.storage={url}", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    kept = optuna.load_study(study_name="cd_ucb", storage=url)
    assert len(kept.trials) == 4
    folder = next(p.parent.parent for p in tmp_path.rglob(f"{study.FOLDER}/0.json"))
    recorded = {t["trial"]: t["objective"] for t in study.finished_trials(folder)}
    assert {t.number: t.value for t in kept.trials} == recorded
