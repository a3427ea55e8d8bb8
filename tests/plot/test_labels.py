"""Group titles, agent labels and swept settings from a hand-made table of run configs."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from nslb_cli.plot import labels as lab
from nslb_cli.plot.identity import DATA, dataset, with_data


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
    assert lab.display_name("cd_ucb") == "CD-UCB" and lab.display_name("exp4s") == "Exp4.S"
    assert lab.display_name("my_agent") == "my_agent", "unknown agents keep their name"
    assert lab.display_name("mts", {"mts": "mTS (true model)"}) == "mTS (true model)"
    assert lab.display_name("mts", {"mTS": "ours"}) == "ours", "rename by display name too"


def test_labels_show_only_settings_that_differ_within_an_agent() -> None:
    table = runs(run("mts"), run("umts", 10), run("umts", 100))
    labels = lab.agent_labels(table, ["name"])
    assert list(labels) == ["mTS", "umTS (num_particles=10)", "umTS (num_particles=100)"]
    single = runs(run("mts"), run("umts", 10))
    assert list(lab.agent_labels(single, ["name"])) == ["mTS", "umTS"]


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


def movielens_run(data_dir: object, fingerprint: object = None, agent: str = "mts") -> dict:
    config = {
        "name": "ml",
        "env.name": "movielens",
        "env.release": "ml-1m",
        "env.data_dir": data_dir,
        "env.min_user_ratings": 200,
        "agent.name": agent,
    }
    if fingerprint is not None:
        config["env_data.fingerprint"] = fingerprint
    return with_data(config, Path("/nonexistent"))


def test_the_data_is_part_of_the_environment() -> None:
    table = pd.DataFrame(
        [
            movielens_run("/data/a", "aaaa1111ffff"),
            movielens_run("/data/b", "bbbb2222ffff"),
            movielens_run("/copy/of/a", "aaaa1111ffff", agent="random"),
            movielens_run("/data/c"),
            movielens_run(None),
        ],
        dtype=object,
    )
    assert list(lab.group_titles(table)) == [
        "ml (data=/data/a [ratings aaaa1111])",
        "ml (data=/data/b [ratings bbbb2222])",
        "ml (data=/data/a [ratings aaaa1111])",  # the same data as the first: one group
        "ml (data=/data/c)",
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
