"""Every preset composes and validates, every env plays with the agents the pairing rule
lets it, and every bad command line is refused in one line naming the key at fault."""

from __future__ import annotations

import re
from dataclasses import fields
from pathlib import Path

import numpy as np
import pytest
from hydra import compose, initialize_config_module
from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.override_parser.overrides_parser import OverridesParser

from nslb_cli.agents import AGENTS
from nslb_cli.common.errors import ConfigError
from nslb_cli.envs import ENVIRONMENTS
from nslb_cli.runner import sweep
from nslb_cli.runner.compose import CONFIG_MODULE, check_command_line, load, register_options
from nslb_cli.runner.config import pairing_refusal, validate
from nslb_cli.runner.folders import folder_name
from nslb_cli.runner.overrides import expand_home
from tests.helpers.paths import CONF

HOME_MISSING = "~/surely-not-a-folder-of-nslb"


def options(group: str) -> list[str]:
    root = CONF / group
    return sorted(str(p.relative_to(root).with_suffix("")) for p in root.rglob("*.yaml"))


def _advised(refusal: ConfigError) -> tuple[str, list[str]]:
    """What a pairing refusal advises instead: ``("agent", names)`` from "choose an agent
    that uses contexts (mts, umts, …)", ``("env", names)`` from "use env=a or env=b"."""
    listed = re.search(r"\(([\w, ]+), …\)", refusal.message)
    if listed:
        return "agent", listed.group(1).split(", ")
    return "env", re.findall(r"env=(\w+)", refusal.message.partition(": use ")[2])


def test_every_env_and_agent_pair_plays_or_is_refused_with_advice_that_plays() -> None:
    """Over the registries (no composition): a pair is refused in one line naming both,
    whose advice (the agents, or the environments, it names instead) the rule accepts; and
    every environment and agent plays with some other."""
    plays: dict[str, set[str]] = {name: set() for name in [*ENVIRONMENTS, *AGENTS]}
    for env in ENVIRONMENTS:
        for agent in AGENTS:
            refusal = pairing_refusal(ENVIRONMENTS[env], AGENTS[agent], env, agent)
            if refusal is None:
                plays[env].add(agent)
                plays[agent].add(env)
                continue
            assert refusal.key == "agent" and "\n" not in refusal.message
            assert agent in refusal.message and f"env={env}" in refusal.message
            kind, advised = _advised(refusal)
            assert advised, refusal.message
            for other in advised:
                pair = (env, other) if kind == "agent" else (other, agent)
                assert pairing_refusal(ENVIRONMENTS[pair[0]], AGENTS[pair[1]], *pair) is None
    assert all(plays.values()), [name for name, others in plays.items() if not others]


def test_validate_refuses_the_pairs_the_rule_refuses_and_builds_the_others() -> None:
    register_options()
    with initialize_config_module(CONFIG_MODULE, version_base="1.3"):
        refused = compose("config", overrides=["env=latent_ar", "agent=mts"])
        preset = compose("config", overrides=["env=piecewise/problem_2", "agent=glr_klucb"])
    expected = pairing_refusal(ENVIRONMENTS["latent_ar"], AGENTS["mts"], "latent_ar", "mts")
    with pytest.raises(ConfigError) as caught:
        validate(refused)
    assert expected is not None and str(caught.value) == str(expected)
    config = validate(preset)  # Besson et al.'s Problem 2: 3 arms, 4 changes (5 segments)
    assert (config.env.name, config.agent.name) == ("piecewise", "glr_klucb")
    assert np.shape(config.env.means) == (5, 3)


def test_a_sliding_window_beyond_the_horizon_is_the_whole_run_and_said() -> None:
    """The same config for both engines: a window of every round, as long as the run (a
    detector's window, which never fills when longer than the run, is left as given)."""
    for agent in ("sw_mucb", "sw_ucb", "sw_ts"):
        config = load([f"agent={agent}", "agent.tau=100000000", "env.horizon=500"])
        assert config.agent.tau == 500
        assert config.notes == (
            "agent.tau=100000000 is beyond env.horizon=500: the window is the whole run, run "
            "as agent.tau=500",
        )
    assert load(["agent=sw_mucb", "agent.tau=500", "env.horizon=500"]).notes == ()
    assert load(["agent=cd_ucb", "agent.tau=1000", "env.horizon=500"]).agent.tau == 1000


@pytest.mark.parametrize("experiment", options("experiment"))
def test_every_experiment_preset_composes(experiment: str) -> None:
    assert check_command_line([f"experiment={experiment}"], multirun=False).jobs >= 1


SWEEP = ["run.n_seeds=3", "agent=random,oracle", "env.horizon=4,5", "run.seed=range(0,4,2)",
         "++env.sigma=0.5", "run.n_seeds=1,2,3"]  # fmt: skip  # the last replaces the first


def test_a_sweep_counts_the_jobs_of_hydras_basic_sweeper() -> None:
    """The count the failures' summary divides by: the jobs Hydra's basic sweeper makes."""
    jobs = BasicSweeper.split_arguments(OverridesParser.create().parse_overrides(SWEEP), None)
    assert check_command_line(SWEEP, multirun=True).jobs == len(jobs[0]) == 24
    assert sweep.size(OverridesParser.create().parse_overrides(SWEEP[:2])) == 2


def test_a_sweep_refuses_an_interval_naming_the_key() -> None:
    with pytest.raises(ConfigError, match=r"^agent\.tau: 'agent\.tau=interval\(1,9\)': a sweep"):
        check_command_line(["agent=cd_ucb", "agent.tau=interval(1,9)"], multirun=True)


def refusals(tmp: Path) -> list[tuple[list[str], str]]:
    """(arguments, a fragment the one line must contain); ``-m`` first for a sweep; each row
    ends with the argument at fault (``named_key``). ``tmp`` holds a file and a folder."""
    a_file, empty = tmp / "a_file", tmp / "empty"
    ml = ["env=movielens", f"env.data_dir={empty}", f"env.cache_dir={tmp / 'cache'}"]
    return [
        (["hydra.run.dir=/proc/nope"], "hydra.run.dir: cannot write /proc/nope"),
        ([f"hydra.run.dir={a_file}/x"], "is a file, not a folder"),
        (["-m", "agent=mts,random", f"hydra.sweep.dir={a_file}/x"], "hydra.sweep.dir"),
        (["agent.num_particles=[1,2"], "cannot parse 'agent.num_particles=[1,2'"),
        (["env.horizon=${oops"], "cannot parse 'env.horizon=${oops'"),
        (["=5"], "'=5' has no key"),
        (["env=nowhere"], "Could not find 'env/nowhere' (available: latent_ar, logged, movielens"),
        (["agent=nobody"], "Could not find 'agent/nobody'"),
        (["agent=[mts,umts]"], "sweep with -m agent=mts,umts"),
        (["experiment/paper=fixed"], "write experiment=paper/fixed"),
        (["env.horizon=200", "~env.horizon"], "deletes a setting"),
        (["+agent.typo=1"], "agent.typo: unknown key for agent 'mts'"),
        (["+env.horizn=5"], "env.horizn: unknown key for env 'synthetic'"),
        (["+typo=1"], "typo: unknown top-level key"),
        (["typo=1"], "typo: unknown top-level key"),  # not Hydra's advice to add it
        (["agent.typo=1"], "agent.typo: unknown key for agent 'mts'"),
        (["agent=cd_ucb", "agent.taux=3"], "unknown key for agent 'cd_ucb' (did you mean"),
        (["run.n_sed=3"], "unknown key for run (did you mean run.n_seeds?)"),
        (["-m", "agent=cd_ucb", "agent.taux=3,4"], "unknown key for agent 'cd_ucb' (did"),
        (["engine=jax"], "'engine=jax' is not a top-level key: write run.engine=jax"),
        (["agent=umts", "num_particles=5"], "write agent.num_particles=5"),
        (["-m", "horizon=3,4"], "not a top-level key: write env.horizon=3,4"),
        (["-m", "agent=cd_ucb,cd_ts", "agent.gamma=0.1"], "write ++agent.gamma=0.1"),
        (["run.n_seeds=3,4"], "a run has one: to run each, sweep with -m run.n_seeds=3,4"),
        (["-m", "hydra.job.name=a,b"], "sweeps one of Hydra's own settings"),
        (
            ["experiment=paper/known", "hydra.sweeper.params.agent=mts,random"],
            "sweep agent=mts,random instead",
        ),
        (["-m", "hparams_search=cd_ucb,cd_ts"], "one study at a time"),
        (["-m", "hydra.sweeper.max_batch_size=0"], "must be >= 1 or null, got 0"),
        (["agent=umts", "agent.num_particles=0"], "agent.num_particles: must be > 0"),
        (["agent=umts", "agent.num_particles=many"], "agent.num_particles: Value 'many'"),
        (["agent=umts", "agent.num_particles=2.5"], "agent.num_particles: Value '2.5'"),
        (["agent=umts", "agent.action_selection=best"], "agent.action_selection: must be one of"),
        (["agent=umts", "agent.resampling=residual"], "agent.resampling: must be one of"),
        (["agent=umts", "agent.resample_threshold=1.5"], "agent.resample_threshold: must be in"),
        (["env.switch_prob=-0.5"], "env.switch_prob: must be in [0, 1]"),
        (["env.horizon=-10"], "env.horizon: must be > 0"),
        (["env.dynamics=sometimes"], "env.dynamics: must be one of fixed, markov"),
        (["env.model=maybe"], "env.model: must be one of known, prior"),
        (["env.sigma=nan"], "env.sigma: must be a finite number"),
        (["env.sigma=1e-300"], "env.sigma: must be >= 1e-06"),
        (["env.stay_concentration=0.001"], "env.stay_concentration: must be >= 0.01"),
        (["run.n_seeds=0"], "run.n_seeds: must be > 0"),
        (["run.seed=-1"], "run.seed: must be >= 0"),
        (["run.batch_size=0"], "run.batch_size: must be > 0"),
        (["run.overwrite=maybe"], "run.overwrite"),
        (["name=../../elsewhere"], "name: must be folder names"),
        (["name=/abs/path"], "name: must be folder names"),
        ([*ml, "agent=cd_ucb"], "cd_ucb learns each arm's rewards"),
        (["env=movielens", "env.release=ml-7m"], "env.release"),
        (["env=movielens", f"env.data_dir={HOME_MISSING}"], f"{Path.home()}/surely-not"),
        (["agent=umts", "agent.num_particles=10000000000000"], "lower agent.num_particles"),
        (["env.horizon=100000000000"], "lower env.horizon"),
        (["agent=mts", *ml, "env.n_arms=100000"], "lower env.horizon, env.n_arms"),
    ]


def named_key(arguments: list[str]) -> str:
    """What the one line must name: the key of the row's last argument, the one at fault
    (``+agent.typo=1`` -> ``agent.typo``), or ``=5``, which has no key, as it is."""
    key = arguments[-1].split("=", 1)[0].lstrip("+~")
    return key if key else arguments[-1]


def test_the_tables_bad_command_lines_are_each_refused_in_one_line_naming_the_key(
    tmp_path: Path,
) -> None:
    """The README's promise for each of the table's (at least thirty, distinct) bad command
    lines: refused before anything runs, in one line that names the key at fault, as in
    ``agent.num_particles: must be > 0, got -5``. (``tests/cli/test_errors.py`` shows the
    command's exit status and stderr for a few of them.)"""
    (tmp_path / "a_file").write_text("")
    (tmp_path / "empty").mkdir()
    table = refusals(tmp_path)
    assert len(table) >= 30
    assert len({tuple(arguments) for arguments, _ in table}) == len(table), "no row twice"
    for arguments, fragment in table:
        multirun = arguments[0] == "-m"
        with pytest.raises(ConfigError) as caught:
            check_command_line(expand_home(arguments[multirun:]), multirun=multirun)
        text = str(caught.value)
        assert fragment in text and named_key(arguments) in text, (arguments, text)
        assert "\n" not in text, (arguments, text)
        assert not re.match(r"overrides: [\w.]+: ", text), ("nslb's refusal as Hydra's", text)


def test_folder_names_ignore_plus_prefixes_and_order() -> None:
    assert folder_name("++agent.tau=50,env.horizon=3") == "agent.tau=50,env.horizon=3"
    assert folder_name("z.b=1,+a.c=2") == "a.c=2,z.b=1"
    assert folder_name("agent.tau=[1,2],env.x=3") == "agent.tau=[1,2],env.x=3"
    assert folder_name("") == ""


def test_the_last_seeds_a_run_may_have_end_at_the_largest_int64() -> None:
    """run.seed + run.n_seeds - 1 = 2^63 - 1 is valid; the seeds' range once stopped at 2^63,
    which numpy turned to floats and then refused with a traceback."""
    seeds = load(["run.seed=9223372036854775806", "run.n_seeds=2"]).seeds
    assert seeds.dtype == np.int64 and seeds.tolist() == [2**63 - 2, 2**63 - 1]


def test_the_advice_for_a_key_beside_a_sweep_over_its_group_is_taken() -> None:
    """``++agent.gamma=0.1`` sets the key in each swept agent (which has it)."""
    assert check_command_line(["agent=cd_ucb,cd_ts", "++agent.gamma=0.1"], multirun=True).jobs == 2


def test_a_built_in_agents_option_is_its_params_defaults_in_field_order() -> None:
    register_options()
    with initialize_config_module(CONFIG_MODULE, version_base="1.3"):
        composed = compose("config", overrides=["agent=cd_lints"])
    defaults = {f.name: f.default for f in fields(AGENTS["cd_lints"].Params)}
    assert list(composed.agent.items()) == list(defaults.items())
