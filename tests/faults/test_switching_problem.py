"""A switching-latent problem file that cannot be a problem is refused in one line naming
env.problem and what to fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nslb_cli.common.errors import ConfigError
from nslb_cli.envs.switching_latent import SwitchingLatentParams

GOOD = {
    "transitions": [[0.9, 0.1], [0.2, 0.8]],
    "observations": [[[0.5, 0.5], [0.9, 0.1]], [[0.2, 0.8], [0.4, 0.6]]],
    "rewards": [0.0, 1.0],
}

CASES = {
    "missing field": ({"transitions": GOOD["transitions"]}, r"no field observations or state_"),
    "row not summing to 1": ({**GOOD, "transitions": [[0.9, 0.2], [0.2, 0.8]]},
                             r"transitions row \[0\] sums to 1.1, not 1"),
    "wrong shape": ({**GOOD, "transitions": [[1.0]]}, r"transitions must be 2 x 2 for 2 states"),
    "wrong axes": ({**GOOD, "observations": [0.5, 0.5]}, r"observations must have 3 axes"),
    "huge value": ({**GOOD, "transitions": [[1e308, 0.0], [0.2, 0.8]]},
                   r"probabilities in \[0, 1\]"),
    "not numbers": ({**GOOD, "rewards": ["a", "b"]}, r"rewards"),
    "repeated rewards": ({**GOOD, "rewards": [0.5, 0.5]}, r"distinct numbers in \[0, 1\]"),
    "rewards for other outcomes": ({**GOOD, "rewards": [0.0, 0.5, 1.0]},
                                   r"3 rewards for 2 outcomes"),
    "not an object": ([1, 2], r"expected a JSON object"),
    "one field twice": ({**GOOD, "transition_matrix": GOOD["transitions"]},
                        r"transitions and transition_matrix are one field: keep one"),
    "a text": ({**GOOD, "transitions": [["0.9", 0.1], [0.2, 0.8]]},
               r'transitions holds "0.9"; only numbers'),
    "a boolean": ({**GOOD, "rewards": [False, True]}, r"rewards holds false; only numbers"),
}  # fmt: skip


def test_a_bad_problem_file_is_one_line(tmp_path: Path) -> None:
    for n, (case, (content, message)) in enumerate(CASES.items()):
        path = tmp_path / f"problem{n}.json"
        path.write_text(json.dumps(content))
        with pytest.raises(ConfigError, match=r"^problem: .*" + message) as err:
            SwitchingLatentParams(problem=str(path))
        assert "\n" not in str(err.value), case


def test_a_file_that_is_not_json_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "problem.json"
    path.write_text("transitions: [[1]]")
    with pytest.raises(ConfigError, match=r"^problem: cannot read .* as JSON"):
        SwitchingLatentParams(problem=str(path))


def test_a_size_the_problem_file_contradicts_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "problem.json"
    path.write_text(json.dumps(GOOD))
    assert SwitchingLatentParams(problem=str(path), n_arms=2).sizes == (2, 2, 2)
    with pytest.raises(ConfigError, match=r"^n_states: .* has 2, not 7: the problem file sets"):
        SwitchingLatentParams(problem=str(path), n_states=7, n_arms=9)


def test_bernoulli_with_other_rewards_and_sizes_out_of_range_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "problem.json"
    path.write_text(json.dumps({**GOOD, "rewards": [1.0, 0.0]}))
    with pytest.raises(ConfigError, match=r"^reward: bernoulli needs"):
        SwitchingLatentParams(problem=str(path), reward="bernoulli")
    with pytest.raises(ConfigError, match=r"^n_arms: must be an integer from 1 to 64"):
        SwitchingLatentParams(n_arms=0)
    with pytest.raises(ConfigError, match=r"^min_transition_prob: must lie in"):
        SwitchingLatentParams(n_states=4, min_transition_prob=0.3)
