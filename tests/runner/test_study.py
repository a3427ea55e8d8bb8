"""Optuna studies: trials recorded with the job's objective, best.yaml taken back by `nslb run`."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml

from nslb_cli.common.errors import ConfigError
from nslb_cli.runner import study
from nslb_cli.store.folder import BEST_FILE
from tests.helpers.cli import nslb, nslb_process

CONF = Path(__file__).resolve().parents[2] / "conf"

STUDY = ["hparams_search=cd_ucb", "env.horizon=120", "run.n_seeds=3", "hydra.sweeper.n_trials=4"]


WORLD = {"env.sigma": 0.3, "agent.name": "cd_ucb", "run.objective": "cum_regret"}


def plan_of(**changes: Any) -> study.Plan:
    """A study of cd_ucb's agent.tau in the world ``WORLD`` (but for ``changes``)."""
    fields = {"agent": "cd_ucb", "trials": 4, "note": "", "storage": None, "name": None,
              "tuned": ["agent.tau"], "world": WORLD}  # fmt: skip
    return study.Plan(**{**fields, **changes})


def _best(folder: Path) -> dict[str, Any]:
    """The ``best.yaml`` the study in ``folder`` ends with."""
    study.finish(folder)
    return yaml.safe_load((folder / BEST_FILE).read_text())  # type: ignore[no-any-return]


def write_trial(
    folder: Path, number: int, objective: float | None, direction: str = "minimize"
) -> None:
    """Record trial ``number`` (tau = 10 (number + 1)) of the study running in ``folder``,
    starting one (``plan_of``) if none runs."""
    if not (folder / study.NEXT).is_dir():
        study.start(folder, plan_of())
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
        write_trial(tmp_path, number, value)
    record = json.loads((tmp_path / study.NEXT / "2.json").read_text())
    assert record["params"] == {"agent.tau": 30} and record["direction"] == "minimize"
    best = _best(tmp_path)
    # the study's own keys and its tuning seeds are left out; the agent is named
    assert best["overrides"] == ["agent=cd_ucb", "agent.tau=30", "env.sigma=0.3"]
    assert best["objective"] == 12.5


def test_a_reward_study_keeps_the_highest(tmp_path: Path) -> None:
    for number, value in enumerate([30.0, 12.5, 40.0]):
        write_trial(tmp_path, number, value, direction="maximize")
    best = _best(tmp_path)
    assert best["objective"] == 40.0 and "agent.tau=30" in best["overrides"]


def test_no_finished_trial_writes_no_best(tmp_path: Path) -> None:
    write_trial(tmp_path, 0, None)
    assert study.finish(tmp_path) == "no trial of the study finished; nothing to choose from"
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


@pytest.fixture(scope="module")
def tuned(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A folder where ``nslb run STUDY…`` ran, and what it printed (read, never changed)."""
    folder = tmp_path_factory.mktemp("tuned")
    # a process of its own: what Optuna logs into nslb's log, as in a fresh command
    done = nslb_process("run", *STUDY, cwd=folder)
    assert done.returncode == 0, done.stderr
    return folder, done.stdout + done.stderr


def test_a_study_records_each_trial_s_mean_final_regret_and_reruns_its_best(
    tmp_path: Path, tuned: tuple[Path, str]
) -> None:
    where, printed = tuned
    assert "\x1b[" not in printed, "no colour codes in a piped log"
    assert "Trial 0 finished with value: " in printed, "the study's lines, in nslb's log"
    sweep = where / "outputs/tune/cd_ucb"
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
    # the best trial's overrides, rerun on its tuning seeds, give the same results (given
    # as overrides: best.yaml itself refuses its tuning seeds)
    tau = next(o for o in best["overrides"] if o.startswith("agent.tau="))
    again = nslb(
        "run",
        *best["overrides"],
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


def test_a_seeded_study_proposes_the_same_trials_again(
    tmp_path: Path, tuned: tuple[Path, str]
) -> None:
    assert nslb("run", *STUDY, cwd=tmp_path).returncode == 0
    runs = []
    for folder in (tuned[0], tmp_path):
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
    study.start(tmp_path, plan_of())
    study.record_trial(tmp_path, 0, overrides, {"agent.tau"}, "cum_regret", 1.0)
    best = _best(tmp_path)
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
        write_trial(tmp_path, number, value)
    (tmp_path / study.NEXT / "2.json").write_text('{"trial": 2, "objective": 1')  # cut
    (tmp_path / study.NEXT / "3.json").write_text("[1, 2]\n")  # not a record
    assert [t["trial"] for t in study.finished_trials(tmp_path / study.NEXT)] == [0, 1]
    best = _best(tmp_path)
    assert best["objective"] == 12.5


def test_a_study_kept_in_a_database_runs_and_its_trials_are_in_it(tmp_path: Path) -> None:
    """Optuna's database storage (``hydra.sweeper.storage``): the study runs, and the
    database holds its trials, each with the objective nslb recorded for it."""
    import optuna

    url = f"sqlite:///{tmp_path / 'study.db'}"
    done = nslb("run", *STUDY, f"hydra.sweeper.storage={url}", "hydra.sweeper.n_trials=2",
                "run.n_seeds=1", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    kept = optuna.load_study(study_name="cd_ucb", storage=url)
    assert len(kept.trials) == 2
    folder = next(p.parent.parent for p in tmp_path.rglob(f"{study.FOLDER}/0.json"))
    recorded = {t["trial"]: t["objective"] for t in study.finished_trials(folder / study.FOLDER)}
    assert {t.number: t.value for t in kept.trials} == recorded


def _checked(tmp_path: Path, *overrides: str) -> study.Plan:
    """The study ``nslb run hparams_search=cd_ucb overrides…`` would run, checked."""
    from nslb_cli.runner.compose import check_command_line

    arguments = ["hparams_search=cd_ucb", f"hydra.sweep.dir={tmp_path}", *overrides]
    planned = check_command_line(arguments, multirun=True).study
    assert planned is not None
    return planned


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["hydra.sweeper.direction=up"], "hydra.sweeper.direction: up does not follow "
         "run.objective=cum_regret, which a study must minimize: give hydra.sweeper."
         "direction=minimize"),
        (["hydra.sweeper.direction=maximize"], "maximize does not follow run.objective=cum_regret"),
        (["run.objective=cum_reward", "hydra.sweeper.direction=minimize"],
         "minimize does not follow run.objective=cum_reward, which a study must maximize"),
        (["agent.tau=40"], "agent.tau: the study tunes agent.tau (agent.tau=range(10, 2000, "
         "step=2)), but 'agent.tau=40' fixes it, so every trial would be the same"),
        (["agent.tau=interval(50,10)"], "agent.tau: 'agent.tau=interval(50,10)' runs from 50.0 "
         "down to 10.0: give the low end first"),
        (["agent.tau=range(50,10,step=2)"], "runs from 50 down to 10"),
        (["agent.gamma=interval(0.5,0.1)"], "agent.gamma: 'agent.gamma=interval(0.5,0.1)' runs"),
        (["hydra.sweeper.n_trials=abc"], "Error merging override hydra.sweeper.n_trials=abc: "
         "Value 'abc' of type 'str' could not be converted to Integer"),
        (["hydra.sweeper.storage=3"], "hydra.sweeper.storage: must be a database URL"),
    ],
)  # fmt: skip
def test_a_study_its_direction_or_search_space_cannot_run_is_refused(
    tmp_path: Path, overrides: list[str], message: str
) -> None:
    with pytest.raises(ConfigError) as refused:
        _checked(tmp_path, *overrides)
    assert message in str(refused.value) and "\n" not in str(refused.value)


def test_the_optuna_sweeper_on_a_reward_must_maximise(tmp_path: Path) -> None:
    """Hydra's Optuna sweeper minimises unless told: on run.objective=cum_reward it would
    search for the lowest reward."""
    from nslb_cli.runner.compose import check_command_line

    arguments = ["hydra/sweeper=optuna", "agent=cd_ucb", "agent.tau=range(10,20)",
                 "run.objective=cum_reward", f"hydra.sweep.dir={tmp_path}"]  # fmt: skip
    with pytest.raises(ConfigError, match="minimize does not follow run.objective=cum_reward"):
        check_command_line(arguments, multirun=True)


def test_a_finite_search_space_caps_the_trials_at_its_size(tmp_path: Path) -> None:
    planned = _checked(tmp_path, "agent.tau=choice(10,20)", "agent.gamma=int(interval(0,1))",
                       "hydra.sweeper.n_trials=100000000000000000000")  # fmt: skip
    assert planned.trials == 4 and "the search space has only 4 point(s)" in planned.note
    assert _checked(tmp_path, "agent.tau=range(10,20,step=2)").trials == 6, "ends included"
    assert _checked(tmp_path, "hydra.sweeper.n_trials=10000").trials == 996, "10, 12, …, 2000"
    assert _checked(tmp_path, "agent.gamma=interval(0.0,0.5)").note == "", "real numbers"


@pytest.mark.slow
def test_a_study_of_a_finite_space_ends_with_its_size(tmp_path: Path) -> None:
    """Optuna's sampler draws the same points again: 10^20 trials would never end."""
    done = nslb("run", *STUDY, "env.horizon=40", "agent.tau=choice(10,20)",
                "hydra.sweeper.n_trials=100000000000000000000", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "running 2 trials, not 100000000000000000000" in done.stderr
    assert len(list((tmp_path / "outputs/tune/cd_ucb" / study.FOLDER).glob("*.json"))) == 2


def test_a_grid_sampler_is_one_line_saying_how_to_sweep_a_grid(tmp_path: Path) -> None:
    done = nslb("run", "hparams_search=cd_ucb", "hydra/sweeper/sampler=grid", cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "to run every point of a grid once, sweep it: nslb run -m" in done.stderr


def test_a_best_file_is_found_behind_an_equals_sign_or_another_suffix(tmp_path: Path) -> None:
    """``hydra.sweep.dir=out/sigma=0.5`` puts a '=' in the path the study prints; a copy
    named best.txt is a best file too."""
    for name in ("out/sigma=0.5/best.yaml", "kept/best.txt"):
        path = tmp_path / name
        path.parent.mkdir(parents=True)
        path.write_text(yaml.safe_dump({"overrides": ["agent=cd_ucb", "agent.tau=30"]}))
        assert study.expand_best([str(path), "run.n_seeds=100"]) == [
            "agent=cd_ucb", "agent.tau=30", "run.n_seeds=100",
        ]  # fmt: skip
    assert study.expand_best(["hydra.run.dir=x.yaml"]) == ["hydra.run.dir=x.yaml"]


def test_the_rerun_command_of_best_yaml_quotes_its_path(tmp_path: Path) -> None:
    folder = tmp_path / "a b"
    write_trial(folder, 0, 1.0)
    study.finish(folder)
    assert f"nslb run '{folder}/best.yaml' run.n_seeds=100" in (folder / BEST_FILE).read_text()


def test_a_study_of_ones_own_space_composes_and_its_best_evaluates_without_tuning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``study=tpe`` with a search space on the command line: no ``+`` needed, the study in
    ``outputs/tune/<agent>``, and its ``best.yaml`` holds nothing that would start another
    study (it kept ``study=tpe``: a rerun tuned again, on seeds 1000-1099)."""
    command = ["study=tpe", "agent=sw_ts", "agent.tau=range(10,100)", "env.horizon=30",
               "run.n_seeds=2", "hydra.sweeper.n_trials=2"]  # fmt: skip
    done = nslb("run", *command, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    best = tmp_path / "outputs/tune/sw_ts" / BEST_FILE
    overrides = yaml.safe_load(best.read_text())["overrides"]
    assert not any(o.split("=")[0].lstrip("+") == "study" for o in overrides)
    from nslb_cli.runner.compose import check_command_line

    monkeypatch.chdir(tmp_path)
    rerun = check_command_line(study.expand_best([str(best), "run.n_seeds=2"]), multirun=False)
    assert rerun.study is None and not rerun.multirun and rerun.jobs == 1, "no second study"
    assert rerun.output.parts[:4] == ("outputs", "default", "synthetic", "sw_ts")
    assert rerun.seeds == (0, 1), "the evaluation seeds, not the tuning seeds"


def test_a_best_file_records_its_tuning_seeds_and_is_not_evaluated_on_them(
    tmp_path: Path,
) -> None:
    """The minimum of noisy trials is biased low on the seeds it was chosen on: ``best.yaml``
    names them, and an evaluation that would reuse any is refused in one line."""
    study.start(tmp_path, plan_of(seeds=(1000, 1019)))
    write_trial(tmp_path, 0, 12.5)
    assert _best(tmp_path)["tuning_seeds"] == [1000, 1019]
    best = str(tmp_path / BEST_FILE)
    study.refuse_tuning_seeds([best, "run.n_seeds=100"], 0, 99)  # the evaluation seeds
    study.refuse_tuning_seeds([best], 1020, 1119)
    with pytest.raises(ConfigError, match="seeds 900–1000 overlap the seeds 1000–1019"):
        study.refuse_tuning_seeds([best], 900, 1000)
    refused = nslb("run", best, "run.seed=1019", "run.n_seeds=1", cwd=tmp_path)
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1
    assert "run.seed: seeds 1019–1019 overlap" in refused.stderr


def test_a_best_file_beside_other_agents_is_one_sweep_in_one_group(tmp_path: Path) -> None:
    """``nslb run -m best.yaml agent=cd_ucb,mts``: the tuned agent with its values, the
    others with theirs, in one folder group (one ``nslb plot`` group, Δ against mTS)."""
    best = tmp_path / "best.yaml"
    best.write_text("overrides: [agent=cd_ucb, agent.tau=50, env.horizon=30]\nobjective: 1.0\n")
    done = nslb("run", "-m", str(best), "agent=cd_ucb,mts", "run.n_seeds=2", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    runs = sorted((tmp_path / "outputs/default/synthetic").glob("*/*/config.yaml"))
    configs = {p.parent.parent.name: yaml.safe_load(p.read_text()) for p in runs}
    assert sorted(configs) == ["cd_ucb", "mts"]
    assert configs["cd_ucb"]["agent"]["tau"] == 50, "the tuned value, not the default 100"
    assert {c["env"]["horizon"] for c in configs.values()} == {30}, "one world: one group"
    assert study.expand_best([str(best), "agent=mts,umts"])[-1] == "agent=mts,umts"
