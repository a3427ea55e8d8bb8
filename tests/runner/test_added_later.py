"""Parameters an environment added after results were on disk (``Section.added_later``): a
run records them only away from their defaults, so results written before they existed keep
their result key and their ``config.yaml``."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from nslb_cli.envs.switching_latent import SwitchingLatentParams
from nslb_cli.envs.synthetic import SyntheticParams
from nslb_cli.runner.inputs import recorded

OFFLINE = {"offline_rounds", "offline_sequence", "offline_restarts"}


def _settings(env: Any) -> dict[str, Any]:
    """A resolved config whose env section holds every field of ``env``."""
    values = json.loads(json.dumps(dataclasses.asdict(env)))
    return {"name": "default", "env": values, "agent": {"name": "mts"}, "run": {"seed": 0}}


def test_a_known_or_prior_run_records_none_of_the_learned_models_keys(tmp_path: Path) -> None:
    problem = tmp_path / "problem.json"
    problem.write_text(json.dumps({"transitions": [[0.9, 0.1], [0.2, 0.8]],
                                   "observations": [[[0.7, 0.3]], [[0.4, 0.6]]]}))  # fmt: skip
    for env in (
        SyntheticParams(),
        SyntheticParams(model="prior", reward="bernoulli"),
        SwitchingLatentParams(),
        SwitchingLatentParams(problem=str(problem)),  # recorded from the validated params
    ):
        kept = recorded(_settings(env), env)["env"]
        assert set(kept) == set(_settings(env)["env"]) - set(type(env).added_later), env
        assert not OFFLINE & set(kept)
    assert recorded(_settings(SyntheticParams()), SyntheticParams())["env"]["model"] == "known"


def test_a_parameter_added_later_is_recorded_away_from_its_default() -> None:
    env = SwitchingLatentParams(model="learned", offline_rounds=500)
    kept = recorded(_settings(env), env)["env"]
    assert (kept["model"], kept["offline_rounds"]) == ("learned", 500)
    assert "offline_sequence" not in kept
