"""The presets (docs/design.md §5), the paper's and its successors' (family/…): their settings,
a sweep with or without -m, run -> plot, ``make paper`` and ``make family``.

That every job of every preset validates is checked by tests/runner/test_compose.py.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pandas as pd
import pytest
from hydra import compose, initialize_config_module

from nslb_cli.plot.labels import display_name
from nslb_cli.runner.compose import CONFIG_MODULE, CONFIG_NAME, check_command_line
from tests.helpers.cli import nslb
from tests.helpers.movielens import needs_ml_100k
from tests.helpers.paths import ML_100K, REPO

PAPER_AGENTS = ["cd_ucb", "cd_ts", "exp4s", "mts", "umts"]
MOVIELENS_AGENTS = ["cd_linucb", "cd_lints", "exp4s", "mts", "umts"]
SYNTHETIC = {  # preset -> (env.dynamics, env.model)
    "fixed": ("fixed", "known"),
    "known": ("markov", "known"),
    "prior": ("markov", "prior"),
}


def composed(preset: str, *overrides: str):
    with initialize_config_module(CONFIG_MODULE, version_base="1.3"):
        return compose(
            CONFIG_NAME, overrides=[f"experiment={preset}", *overrides], return_hydra_config=True
        )


def test_presets_hold_the_papers_settings() -> None:
    for preset, (dynamics, model) in SYNTHETIC.items():
        full, smoke = composed(f"paper/{preset}"), composed(f"paper/smoke/{preset}")
        for cfg in (full, smoke):
            world = (cfg.env.name, cfg.env.dynamics, cfg.env.model)
            assert world == ("synthetic", dynamics, model), preset
            assert cfg.hydra.mode.name == "MULTIRUN", "a sweep without -m"
            assert cfg.hydra.sweeper.params.agent.split(",") == PAPER_AGENTS
        assert full.name == f"paper/{preset}" and smoke.name == f"smoke/paper/{preset}"
        assert full.run.n_seeds == 100 and full.env.horizon == 2000 and full.env.n_arms == 5
        assert smoke.run.n_seeds < 10 and smoke.env.horizon < full.env.horizon
        assert full.hydra.sweep.dir == f"outputs/paper/{preset}"


def test_movielens_preset_holds_the_papers_settings() -> None:
    full, smoke = composed("paper/movielens"), composed("paper/smoke/movielens")
    for cfg in (full, smoke):
        assert cfg.env.name == "movielens" and cfg.hydra.mode.name == "MULTIRUN"
        assert cfg.hydra.sweeper.params.agent.split(",") == MOVIELENS_AGENTS
        assert (cfg.env.n_arms, cfg.env.n_states, cfg.env.rank) == (20, 5, 20)
    assert full.name == "paper/movielens" and full.run.n_seeds == 100
    assert (full.env.release, full.env.min_user_ratings, full.env.min_item_ratings) == (
        "ml-1m",
        200,
        200,
    )
    assert full.env.horizon == 2000 and full.env.stay == 0.9975
    assert smoke.name == "smoke/paper/movielens" and smoke.env.release == "ml-100k"
    assert smoke.run.n_seeds < 10 and smoke.env.horizon < full.env.horizon


def test_a_preset_sweeps_with_or_without_m() -> None:
    overrides = ["experiment=paper/smoke/fixed", "agent=mts,umts"]
    for multirun in (False, True):
        assert check_command_line(overrides, multirun).jobs == 2, multirun


def ok(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``nslb argv…`` in ``cwd``, which must succeed."""
    result = nslb(*argv, cwd=cwd)
    assert result.returncode == 0, result.stderr[-2000:]
    return result


def check_plotted(cwd: Path, presets: list[str], agents: list[str] = PAPER_AGENTS) -> None:
    figures = cwd / "figures"
    summary = pd.read_csv(figures / "summary.csv")
    for preset in presets:
        group = f"smoke/paper/{preset}"
        rows = summary[summary["group"] == group]
        expected = [display_name(agent) for agent in agents]
        assert list(rows["agent"]) == expected, "every agent run, in the paper's order"
        assert set(rows["n_seeds"]) == {3} and set(rows["reference"]) == {"mTS"}
        stem = group.replace("/", "_")
        for name in ("cum_regret", "avg_reward", "final_cum_regret"):
            assert (figures / f"{stem}-{name}.png").stat().st_size > 0
        assert (figures / f"{stem}-summary.md").is_file()


def test_smoke_preset_runs_and_plots(tmp_path: Path) -> None:
    ok("run", "experiment=paper/smoke/fixed", cwd=tmp_path)
    seeds = sorted(p.name for p in (tmp_path / "outputs/smoke/paper/fixed").rglob("seed=*.csv"))
    assert len(seeds) == 3 * len(PAPER_AGENTS)
    result = ok("plot", "outputs", "--out", "figures", "--format", "png", cwd=tmp_path)
    assert "### smoke/paper/fixed" in result.stdout
    check_plotted(tmp_path, ["fixed"])


@pytest.mark.slow
def test_every_smoke_preset_runs_and_plots(tmp_path: Path) -> None:
    for preset in SYNTHETIC:
        ok("run", "-m", f"experiment=paper/smoke/{preset}", cwd=tmp_path)
    ok("plot", "outputs/smoke/paper", "--out", "figures", cwd=tmp_path)
    check_plotted(tmp_path, list(SYNTHETIC))


@pytest.mark.slow
@needs_ml_100k
def test_movielens_smoke_preset_runs_and_plots(tmp_path: Path) -> None:
    data = [f"env.data_dir={ML_100K}", f"env.cache_dir={tmp_path / 'cache'}"]
    ok("run", "experiment=paper/smoke/movielens", *data, cwd=tmp_path)
    ok("plot", "outputs", "--out", "figures", "--format", "png", cwd=tmp_path)
    check_plotted(tmp_path, ["movielens"], MOVIELENS_AGENTS)


def test_make_paper_runs_each_preset_with_the_extra_overrides_then_plots() -> None:
    """``make -n`` prints what ``make paper`` would run (the preset targets run at once in a
    sub-make, which ``-n`` still enters): one ``nslb run`` per preset, then one plot."""
    dry = subprocess.run(
        ["make", "-n", "paper", "PAPER_PRESETS=fixed prior", "PAPER_ARGS=run.n_seeds=2"],
        cwd=REPO, capture_output=True, text=True, check=True,
    )  # fmt: skip
    commands = [line.split() for line in dry.stdout.splitlines() if "/nslb " in line]
    runs = [c for c in commands if c[1] == "run"]
    assert sorted(c[2] for c in runs) == ["experiment=paper/fixed", "experiment=paper/prior"]
    assert all(c[-1] == "run.n_seeds=2" for c in runs)
    assert commands[-1][1:3] == ["plot", "outputs/paper"], "the plot comes after the runs"


SWITCHING_AGENTS = ["sl_ec", "eps_greedy", "exp3s", "umts", "filter_oracle", "mts"]


def test_switching_latent_preset_holds_russo_et_al_figure_2a() -> None:
    cfg = composed("family/switching_latent")
    assert cfg.name == "family/switching_latent" and cfg.hydra.mode.name == "MULTIRUN"
    assert cfg.env.name == "switching_latent" and cfg.env.min_transition_prob == 0.3
    assert (cfg.env.n_states, cfg.env.n_arms, cfg.env.n_outcomes) == (3, 4, 5)
    assert cfg.env.horizon == 10_000 and cfg.hydra.sweeper.params.agent.split(",") == (
        SWITCHING_AGENTS
    )
    assert check_command_line(["experiment=family/switching_latent"], False).jobs == 6


def test_estimation_preset_sweeps_sl_ecs_exploration_on_the_same_problems() -> None:
    cfg, regret = (
        composed("family/switching_latent_estimation"),
        composed("family/switching_latent"),
    )
    assert cfg.agent.name == "sl_ec" and cfg.hydra.mode.name == "MULTIRUN"
    assert cfg.hydra.sweeper.params["agent.exploration"] == "200,800,3200"
    same = ("n_states", "n_arms", "n_outcomes", "min_transition_prob", "transition_multiplier")
    assert all(cfg.env[key] == regret.env[key] for key in same)
    assert cfg.env.horizon == 3200, "the run ends with the longest exploration"


def test_movielens_genres_preset_runs_the_same_agents_on_its_release() -> None:
    cfg = composed("family/movielens_genres")
    assert cfg.name == "family/movielens_genres" and cfg.env.name == "movielens_genres"
    assert cfg.env.release == "ml-1m" and cfg.env.data_dir is None, "the authors' release"
    assert cfg.hydra.sweeper.params.agent.split(",") == SWITCHING_AGENTS


@needs_ml_100k
def test_movielens_genres_preset_validates_every_job_on_ml_100k() -> None:
    overrides = ["experiment=family/movielens_genres", f"env.data_dir={ML_100K}"]
    assert check_command_line(overrides, False).jobs == 6


def test_make_family_runs_the_successors_presets_then_plots_and_skips_movielens_without_data():
    def dry(*settings: str) -> list[list[str]]:
        outside = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL")}
        result = subprocess.run(  # as typed in a shell, not as a make inside `make test`
            ["make", "-n", "--no-print-directory", "family", "FAMILY_ARGS=run.n_seeds=2",
             *settings],
            cwd=REPO, capture_output=True, text=True, check=True, env=outside,
        )  # fmt: skip
        return [line.split() for line in result.stdout.splitlines()]

    plain = dry()
    runs = [c[2] for c in plain if len(c) > 2 and c[1] == "run"]
    assert runs == [
        "experiment=family/latent_ar",
        "experiment=family/switching_latent",
        "experiment=family/switching_latent_estimation",
    ]
    assert any("family/movielens_genres skipped" in " ".join(c) for c in plain)
    assert plain[-1][1:] == ["plot", "outputs/family", "--out", "outputs/family/figures", "--paper"]
    with_data = [c for c in dry("FAMILY_DATA=/data/ml-1m") if len(c) > 2 and c[1] == "run"]
    assert with_data[-1][2:] == [
        "experiment=family/movielens_genres", "env.data_dir=/data/ml-1m", "run.n_seeds=2"
    ]  # fmt: skip


@pytest.mark.slow
def test_switching_presets_run_and_plot_russo_et_als_claim_table(tmp_path: Path) -> None:
    ok(
        "run",
        "experiment=family/switching_latent",
        "run.n_seeds=3",
        "env.horizon=300",
        cwd=tmp_path,
    )
    short = ["env.horizon=300", "agent.exploration=32,256", "run.n_seeds=3"]
    ok("run", "experiment=family/switching_latent_estimation", *short, cwd=tmp_path)
    ok("plot", "outputs/family", "--out", "figures", "--format", "png", "--paper", cwd=tmp_path)
    table = pd.read_csv(tmp_path / "figures/reproduction-russo2024.csv")
    ran = table[table["verdict"] != "not run"]
    assert list(ran["figure"]) == ["2a"] * 4 + ["estimation"], "MovieLens did not run"
    assert set(ran["n_pairs"]) == {3} and not (tmp_path / "figures/reproduction.md").exists()
