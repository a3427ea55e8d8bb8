"""Group titles, agent labels and swept settings from a hand-made table of run configs."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import pandas as pd
import pytest

from nslb_cli.plot import labels as lab
from nslb_cli.plot.identity import DATA, FINGERPRINT, dataset, with_data


def runs(*rows: dict) -> pd.DataFrame:
    columns = ["name", "env.name", "env.switch_prob", "agent.name", "agent.num_particles"]
    table = pd.DataFrame(list(rows), columns=columns, dtype=object)
    return table.assign(folder=[f"f{i}" for i in range(len(table))])


def run(agent: str, particles: float = math.nan, switch: float = 0.005, name: str = "e") -> dict:
    return {
        "name": name,
        "env.name": "synthetic",
        "env.switch_prob": switch,
        "agent.name": agent,
        "agent.num_particles": particles,
    }


def test_display_names_and_renames() -> None:
    from nslb_cli.agents import AGENTS

    nameless = [n for n in AGENTS if not AGENTS.foreign(n) and AGENTS[n].display_name is None]
    assert nameless == [], "every built-in agent has a display name"
    assert lab.display_name("cd_ucb") == "CD-UCB" and lab.display_name("exp4s") == "Exp4.S"
    assert lab.display_name("my_agent") == "my_agent", "unknown agents keep their name"
    assert lab.display_name("mts", {"mts": "mTS (true model)"}) == "mTS (true model)"
    assert lab.display_name("mts", {"mTS": "ours"}) == "ours", "rename by display name too"


def test_labels_show_settings_that_differ_within_an_agent_or_from_its_defaults() -> None:
    table = runs(run("mts"), run("umts", 10), run("umts", 100))
    labels = lab.agent_labels(table, ["name"])
    assert list(labels) == ["mTS", "umTS (num_particles=10)", "umTS (num_particles=100)"]
    single = runs(run("mts"), run("umts", 10))
    assert list(lab.agent_labels(single, ["name"])) == ["mTS", "umTS (num_particles=10)"], (
        "one run at a non-default value still names it"
    )
    default = runs(run("mts"), run("umts", 100.0))
    assert list(lab.agent_labels(default, ["name"])) == ["mTS", "umTS"], "100.0 is the default 100"


def cd_run(agent: str, **settings: object) -> dict:
    defaults = {"agent.tau": 100, "agent.threshold": None, "agent.gamma": 0.0}
    return {"name": "e", "env.name": "synthetic", "agent.name": agent, **defaults, **settings}


def test_the_papers_names_stand_for_the_defaults_alone() -> None:
    """`nslb run -m agent=cd_ucb,cd_ts ++agent.tau=50`: not the paper's CD-UCB (tau=100)."""
    table = pd.DataFrame(
        [cd_run("cd_ucb", **{"agent.tau": 50}), cd_run("cd_ts", **{"agent.tau": 50})],
        dtype=object,
    )
    assert list(lab.agent_labels(table, ["name"])) == ["CD-UCB (tau=50)", "CD-TS (tau=50)"]
    table = pd.DataFrame([cd_run("cd_ucb"), cd_run("cd_ts", **{"agent.gamma": 0.1})], dtype=object)
    assert list(lab.agent_labels(table, ["name"])) == ["CD-UCB", "CD-TS (gamma=0.1)"]
    both = pd.DataFrame(
        [cd_run("cd_ucb", **{"agent.tau": 20, "agent.threshold": 3.5, "agent.gamma": 0})],
        dtype=object,
    )
    assert list(lab.agent_labels(both, ["name"])) == ["CD-UCB (tau=20, threshold=3.5)"], (
        "only the settings that differ, in the config's order; 0 is the default 0.0"
    )


def test_a_recorded_null_that_is_not_the_default_is_named() -> None:
    row = {"name": "e", "agent.name": "cd_lints", "agent.tau": 100, "agent.threshold": None}
    table = pd.DataFrame([row], dtype=object)
    assert list(lab.agent_labels(table, ["name"])) == ["CD-LinTS (threshold=null)"]
    unknown = pd.DataFrame([cd_run("cd_lints")], dtype=object)  # gamma: not a CD-LinTS setting
    assert list(lab.agent_labels(unknown, ["name"])) == ["CD-LinTS (threshold=null, gamma=0)"]
    assert lab.agent_defaults("cd_lints")["agent.threshold"] == 13.0


def test_defaults_are_the_agents_params_defaults() -> None:
    assert lab.agent_defaults("umts") == {
        "agent.name": "umts",
        "agent.num_particles": 100,
        "agent.resample_threshold": 0.5,
        "agent.resampling": "systematic",
        "agent.action_selection": "mean",
    }
    assert lab.agent_defaults("my_plugin") is None


def test_a_plugin_agent_names_every_setting_it_recorded() -> None:
    """No config file: its defaults are unknown (its code is never imported to plot)."""
    rows = [
        {"name": "e", "agent.name": "epsilon_greedy", "agent.epsilon": 0.1, "agent.decay": None},
        {"name": "e", "agent.name": "mts", "agent.epsilon": float("nan"), "agent.decay": None},
    ]
    table = pd.DataFrame(rows, dtype=object)
    labels = lab.agent_labels(table, ["name"])
    assert list(labels) == ["epsilon_greedy (epsilon=0.1, decay=null)", "mTS"]


def test_identical_configs_in_two_folders_get_their_folder() -> None:
    labels = lab.agent_labels(runs(run("mts"), run("mts")), ["name"])
    assert list(labels) == ["mTS [f0]", "mTS [f1]"]


def test_group_titles_name_the_environment_settings_that_differ() -> None:
    table = runs(run("mts", switch=0.01), run("mts", switch=0.02), run("mts", name="other"))
    assert list(lab.group_titles(table)) == [
        "e (switch_prob=0.01)",
        "e (switch_prob=0.02)",
        "other",
    ]


def test_local_data_paths_never_split_groups_or_label_agents() -> None:
    table = runs(run("mts"), run("mts"), run("umts", 10))
    table["env.cache_dir"] = ["/home/a/cache", "/tmp/cache", "/tmp/cache"]
    assert list(lab.group_titles(table)) == ["e"] * 3
    assert "env.cache_dir" not in lab.group_keys(table.columns)
    assert lab.swept_settings(table.assign(group=lab.group_titles(table))) == {"e": []}
    assert "cache_dir" not in lab.environment(table.iloc[0])


def test_order_follows_the_paper_then_settings() -> None:
    table = runs(run("random"), run("umts", 100), run("mts"), run("umts", 20), run("cd_ucb"))
    ordered = lab.order_runs(table)
    assert list(ordered["agent.name"]) == ["cd_ucb", "mts", "umts", "umts", "random"]
    assert list(ordered["agent.num_particles"].iloc[2:4]) == [20, 100], "numbers by value"
    assert list(lab.order_runs(table, ["random", "mts"])["agent.name"])[:2] == ["random", "mts"]


def grouped(table: pd.DataFrame) -> pd.DataFrame:
    return table.assign(group=lab.group_titles(table))


def test_swept_settings_per_group_never_environment_keys() -> None:
    table = runs(run("mts"), run("umts", 10), run("umts", 100), run("mts", name="plain"))
    assert lab.swept_settings(grouped(table)) == {"e": ["agent.num_particles"], "plain": []}
    env_sweep = runs(run("mts", switch=0.01), run("mts", switch=0.02))
    assert lab.swept_settings(grouped(env_sweep)) == {
        "e (switch_prob=0.01)": [],
        "e (switch_prob=0.02)": [],
    }, "two environments are two groups, not a sweep"
    two_envs = runs(run("umts", 10, 0.01), run("umts", 100, 0.01), run("umts", 10, 0.02))
    assert lab.swept_settings(grouped(two_envs)) == {
        "e (switch_prob=0.01)": ["agent.num_particles"],
        "e (switch_prob=0.02)": [],
    }


def test_settings_in_natural_order() -> None:
    table = runs(run("umts", 100), run("umts", 20), run("umts", 5), run("umts", 1000))
    labels = lab.agent_labels(lab.order_runs(table), ["name"])
    assert list(labels) == [f"umTS (num_particles={n})" for n in (5, 20, 100, 1000)]
    words = ["w100", "w20", "w5", None, 3]
    assert sorted(words, key=lab.sort_key) == [3, "w5", "w20", "w100", None]


def test_values_formatted_as_written() -> None:
    assert lab.format_value(100.0) == "100" and lab.format_value(0.005) == "0.005"
    assert lab.short_key("agent.num_particles") == "num_particles"
    assert lab.short_key("env.name") == "env"


def movielens_run(
    folder: Path, data_dir: object, fingerprint: object = None, agent: str = "mts"
) -> dict:
    """A MovieLens run's config as the loader reads it, its fingerprint in ``folder``'s
    data.json."""
    config = {
        "name": "ml",
        "env.name": "movielens",
        "env.release": "ml-1m",
        "env.data_dir": data_dir,
        "env.min_user_ratings": 200,
        "agent.name": agent,
    }
    if fingerprint is not None:
        folder.mkdir()
        (folder / "data.json").write_text(json.dumps({"fingerprint": fingerprint}))
    return with_data(config, folder)


def test_the_data_is_part_of_the_environment(tmp_path: Path) -> None:
    table = pd.DataFrame(
        [
            movielens_run(tmp_path / "a", "/data/a", "aaaa1111ffff"),
            movielens_run(tmp_path / "b", "/data/b", "bbbb2222ffff"),
            movielens_run(tmp_path / "c", "/copy/of/a", "aaaa1111ffff", agent="random"),
            movielens_run(tmp_path / "d", "/data/c"),
            movielens_run(tmp_path / "e", None),
        ],
        dtype=object,
    )
    path_hash = hashlib.sha256(b"/data/c").hexdigest()[:8]
    assert list(lab.group_titles(table)) == [
        "ml (data=a [aaaa1111])",  # short: the folder's name and the ratings' fingerprint
        "ml (data=b [bbbb2222])",
        "ml (data=a [aaaa1111])",  # the same data as the first: one group
        f"ml (data=c-{path_hash})",  # no fingerprint: a hash of the path, as run folders
        "ml (data=ml-1m)",
    ]
    assert table.loc[0, DATA] == table.loc[2, DATA] != table.loc[1, DATA]
    line = lab.environment(table.iloc[3])
    assert line == "movielens (data=/data/c, min_user_ratings=200)", "no release=ml-1m"
    assert "fingerprint" not in " ".join(lab.setting_columns(table.columns))


def test_a_data_record_beside_the_config_gives_the_fingerprint(tmp_path: Path) -> None:
    (tmp_path / "data.json").write_text('{"fingerprint": "cafe0123beef", "users": 364}')
    config = with_data({"env.name": "movielens", "env.data_dir": "/x"}, tmp_path)
    assert config[DATA] == "fingerprint:cafe0123beef"
    assert dataset(config) == "/x [ratings cafe0123]"
    long = {"env.data_dir": "/home/someone/data/movielens/ml-100k", FINGERPRINT: "3f2a9c1e" * 8}
    assert dataset(long, short=True) == "ml-100k [3f2a9c1e]"
    assert dataset({"env.release": "ml-1m", FINGERPRINT: "ab" * 32}, short=True) == "ml-1m"


def selection_runs() -> pd.DataFrame:
    table = runs(run("mts"), run("umts", 10), run("umts", 100), run("random"))
    table["agent.resampling"] = [None, "systematic", "systematic", None]
    return table.assign(group="e", agent=lab.agent_labels(table, ["name"]))


def test_selectors_name_one_agent() -> None:
    table = selection_runs()
    assert lab.select(table, "mts") == ["mTS"]
    assert lab.select(table, "mTS") == ["mTS"], "display names too"
    assert lab.select(table, "umts") == ["umTS (num_particles=10)", "umTS (num_particles=100)"]
    assert lab.select(table, "umts(num_particles=100)") == ["umTS (num_particles=100)"]
    assert lab.select(table, "umTS( agent.num_particles = 1e2 )") == ["umTS (num_particles=100)"]
    assert lab.select(table, "umTS (num_particles=10)") == ["umTS (num_particles=10)"], "a label"
    assert lab.select(table, "umts(resampling=systematic, num_particles=10)") == [
        "umTS (num_particles=10)"
    ]
    assert lab.select(table, "umts(num_particles=30)") == []
    assert lab.select(table, "umts(bogus=1)") == []
    assert lab.select(table, "ours", {"mts": "ours"}) == ["mTS"], "the name it is shown under"
    assert lab.parse_selector("umts(num_particles=100)") == ("umts", {"num_particles": "100"})
    with pytest.raises(lab.SelectionError, match="key=value"):
        lab.parse_selector("umts(100)")


def test_references_are_one_agent_per_group_or_an_error_naming_the_group() -> None:
    table = selection_runs()
    assert lab.references(table, "mts")[0] == {"e": "mTS"}
    with pytest.raises(lab.SelectionError) as err:
        lab.references(table, "umts")
    message = str(err.value)
    assert "\n" not in message and "group 'e'" in message
    assert "'umts' names 2 agents" in message and "e.g. 'umts(num_particles=10)'" in message
    with pytest.raises(lab.SelectionError, match="names no agent in group 'e'"):
        lab.references(table, "cd_ucb")
    found, ambiguous = lab.references(table, "umts", required=False)
    assert found == {"e": None} and ambiguous == {"e": "umts"}, "the default: left out"
    assert lab.references(table, ["cd_ucb", "mts"])[0] == {"e": "mTS"}, "the first present"


def test_an_ordered_sweep_is_one_family_in_value_order() -> None:
    table = runs(run("umts", 1000), run("umts", 10), run("umts", 100), run("mts"))
    table = table.assign(agent=lab.agent_labels(table, ["name"]))
    assert lab.ordered_families(table) == [
        ["umTS (num_particles=10)", "umTS (num_particles=100)", "umTS (num_particles=1000)"]
    ]


def test_runs_come_in_legend_order_and_agents_without_a_rank_last_by_name() -> None:
    agents = ["random", "my_agent", "mts", "cd_ucb", "eps_greedy"]
    table = pd.DataFrame([{"name": "e", "agent.name": agent} for agent in agents], dtype=object)
    ordered = lab.order_runs(table)["agent.name"]
    assert list(ordered) == ["cd_ucb", "mts", "random", "eps_greedy", "my_agent"]


K5 = [0.20916055274476228, -0.2190633204475691, -0.2809366795524309, 0.057676115643902896, 0.23]


def latent_ar_runs(folders: list[str]) -> pd.DataFrame:
    """Trella et al.'s family: LARL at k = 1 and 5, AR coefficients as config.yaml holds them."""
    rows = [
        {
            "name": "family/latent_ar",
            "env.name": "latent_ar",
            "env.order": len(coefficients),
            "env.coefficients": lab.config_value(coefficients),
            "agent.name": "larl",
        }
        for coefficients in ([0.9], K5)
    ]
    return pd.DataFrame(rows, dtype=object).assign(folder=folders)


def test_a_long_setting_is_named_by_the_env_preset_of_its_folder() -> None:
    """The coefficients in full break headings; the preset's folder names the group."""
    table = latent_ar_runs(
        ["latent_ar/paper_k1/larl/env.horizon=100", "family/latent_ar/latent_ar/paper_k5/larl"]
    )
    titles = list(lab.group_titles(table))
    assert titles == [
        "family/latent_ar (paper_k1, order=1)",
        "family/latent_ar (paper_k5, order=5)",
    ]


def test_a_long_setting_without_a_preset_is_a_short_hash_on_one_line() -> None:
    titles = list(lab.group_titles(latent_ar_runs(["a", "b"])))
    digest = hashlib.sha256(lab.config_value(K5).encode()).hexdigest()[:8]
    assert titles[1] == f"family/latent_ar (order=5, coefficients={digest})"
    assert titles[0] == "family/latent_ar (order=1, coefficients=[0.9])", "short: as written"
    assert "\n" not in lab.config_value(K5 * 4), "a long list stays on one line"
