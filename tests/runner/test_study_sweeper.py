"""nslb's Optuna sweeper (``hydra_plugins/nslb_sweep/optuna_sweeper.py``): the search-space
grammar of ``conf/hparams_search/`` drawn by Optuna, trials asked and told in batches of
``n_jobs``, the sampler options, and the study's own database."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import optuna
import pytest
import yaml
from hydra import compose, initialize_config_module
from hydra.core.utils import JobReturn, JobStatus
from hydra.utils import instantiate
from omegaconf import OmegaConf
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

from hydra_plugins.nslb_sweep.optuna_sweeper import OptunaSweeper, search_space
from nslb_cli.runner import study
from nslb_cli.runner.compose import CONFIG_MODULE, register_options
from nslb_cli.store.folder import BEST_FILE
from tests.helpers.cli import nslb
from tests.runner.test_study import plan_of
from tests.runner.test_sweeper import Recorder

optuna.logging.set_verbosity(optuna.logging.WARNING)


@pytest.mark.parametrize(
    ("override", "distribution"),
    [
        # Hydra's range leaves out its stop; the old sweeper's (and this one's) includes it
        ("agent.tau=range(10, 2000, step=2)", IntDistribution(10, 2000, step=2)),
        ("agent.tau=range(10,20)", IntDistribution(10, 20)),
        ("agent.x=range(0.5, 2.5, step=0.5)", FloatDistribution(0.5, 2.5, step=0.5)),
        ("agent.x=interval(0.01, 0.5)", FloatDistribution(0.01, 0.5)),
        ("agent.x=interval(1, 9)", FloatDistribution(1.0, 9.0)),  # the grammar's reals
        ("agent.x=int(interval(1, 9))", IntDistribution(1, 9)),
        ("agent.x=tag(log, interval(0.0001, 0.05))", FloatDistribution(0.0001, 0.05, log=True)),
        ("agent.x=tag(log, int(interval(1, 64)))", IntDistribution(1, 64, log=True)),
        ("agent.x=choice(known, misspecified)", CategoricalDistribution(["known", "misspecified"])),
        ("agent.x=10,20,30", CategoricalDistribution([10, 20, 30])),
    ],
)
def test_each_form_of_the_search_space_is_drawn_as_hydras_optuna_sweeper_drew_it(
    override: str, distribution: object
) -> None:
    tuned, fixed = search_space([override])
    trial = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0)).ask()
    tuned[override.split("=")[0]](trial)
    assert trial.distributions == {override.split("=")[0]: distribution} and fixed == {}


def test_a_fixed_value_is_kept_and_wins_over_a_sweep_of_its_key() -> None:
    tuned, fixed = search_space(["agent.tau=range(10,20)", "agent.gamma=interval(0,1)",
                                 "env.horizon=60", "agent.gamma=0.5"])  # fmt: skip
    assert list(tuned) == ["agent.tau"] and fixed == {"env.horizon": "60", "agent.gamma": "0.5"}


class Objective(Recorder):
    """A launcher that runs nothing: each job's objective is |tau - 500|, but job 2's, which
    fails (returns none); its batches recorded."""

    def launch(
        self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int
    ) -> Sequence[JobReturn]:
        super().launch(job_overrides, initial_job_idx)
        taus = [int(job[0].removeprefix("agent.tau=")) for job in job_overrides]
        numbers = range(initial_job_idx, initial_job_idx + len(taus))
        values = [
            None if n == 2 else abs(tau - 500.0) for n, tau in zip(numbers, taus, strict=True)
        ]
        return [JobReturn(status=JobStatus.COMPLETED, _return_value=v) for v in values]


def _swept(sampler: optuna.samplers.BaseSampler) -> tuple[Objective, optuna.Study]:
    """Five trials of agent.tau in batches of two (in memory: the command's database is
    the last test's)."""
    kept = optuna.storages.InMemoryStorage()
    space = OmegaConf.create({"agent.tau": "range(10, 1000, step=10)"})
    sweeper = OptunaSweeper(sampler, "minimize", kept, "s", n_trials=5, n_jobs=2, params=space)  # type: ignore[arg-type]
    sweeper.config = OmegaConf.create({"hydra": {"sweep": {"dir": "unused"}}})
    sweeper.launcher = launcher = Objective()
    sweeper.sweep(["env.horizon=60"])
    return launcher, optuna.load_study(study_name="s", storage=kept)


def test_trials_are_asked_in_batches_of_n_jobs_and_told_their_objective() -> None:
    launcher, kept = _swept(optuna.samplers.RandomSampler(seed=3))
    assert [(first, len(jobs)) for first, jobs in launcher.batches] == [(0, 2), (2, 2), (4, 1)]
    jobs = [job for _, batch in launcher.batches for job in batch]
    assert all(job[1:] == ["env.horizon=60"] for job in jobs), "the drawn value, then the fixed"
    assert [f"agent.tau={t.params['agent.tau']}" for t in kept.trials] == [j[0] for j in jobs]
    for trial in kept.trials:
        tau = trial.params["agent.tau"]
        assert 10 <= tau <= 1000 and tau % 10 == 0
        if trial.number == 2:
            assert trial.state == optuna.trial.TrialState.FAIL and trial.value is None
        else:
            assert trial.state == optuna.trial.TrialState.COMPLETE and trial.value == abs(tau - 500)
    done = [t.value for t in kept.trials if t.value is not None]
    assert kept.best_value == min(done)


def test_a_seeded_sampler_asks_the_same_trials_again() -> None:
    draws = []
    for _ in range(2):
        _, kept = _swept(optuna.samplers.TPESampler(seed=0, n_startup_trials=2))
        draws.append([t.params for t in kept.trials])
    assert draws[0] == draws[1] and len({str(d) for d in draws[0]}) > 1


def test_every_sampler_option_composes_into_its_optuna_sampler_seeded() -> None:
    register_options()
    with initialize_config_module(CONFIG_MODULE, version_base="1.3"):
        for name, node in study.SAMPLERS.items():
            overrides = ["hparams_search=cd_ucb", f"hydra/sweeper/sampler={name}"]
            config = compose("config", overrides=overrides, return_hydra_config=True)
            sampler = instantiate(config.hydra.sweeper.sampler)
            assert type(sampler).__name__ == node._target_.rsplit(".", 1)[1], name
            assert config.hydra.sweeper.sampler.seed == 0, "conf/study/tpe.yaml's seed"


def test_each_study_in_a_folder_begins_its_own_database_anew(tmp_path: Path) -> None:
    """As its record does: the sampler learns from this study's trials only, and a seeded
    study reruns its trials."""
    url = study.storage_url(None, tmp_path)
    study.start(tmp_path, plan_of(name="cd_ucb"))
    optuna.load_study(study_name="cd_ucb", storage=url).enqueue_trial({"agent.tau": 10})
    assert len(optuna.load_study(study_name="cd_ucb", storage=url).trials) == 1
    study.start(tmp_path, plan_of(name="cd_ucb"))
    assert optuna.load_study(study_name="cd_ucb", storage=url).trials == []


def test_another_process_opens_a_study_s_database_and_finds_its_best(tmp_path: Path) -> None:
    done = nslb("run", "hparams_search=cd_ucb", "env.horizon=60", "run.n_seeds=2",
                "hydra.sweeper.n_trials=3", "run.progress=false", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    best = yaml.safe_load((tmp_path / "outputs/tune/cd_ucb" / BEST_FILE).read_text())
    url = "sqlite:///outputs/tune/cd_ucb/.nslb-optuna.db"  # as docs/guide/tuning.md shows
    script = (
        "import json, optuna\n"
        f"kept = optuna.load_study(study_name='cd_ucb', storage={url!r})\n"
        "print(json.dumps({'states': [t.state.name for t in kept.trials],"
        " 'best': kept.best_value, 'tau': kept.best_params['agent.tau']}))"
    )
    read = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60, check=True)  # fmt: skip
    seen = json.loads(read.stdout)
    assert seen["states"] == ["COMPLETE"] * 3
    assert math.isclose(seen["best"], best["objective"], rel_tol=1e-12)
    assert f"agent.tau={seen['tau']}" in best["overrides"]
