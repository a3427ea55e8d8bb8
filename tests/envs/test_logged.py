"""env=logged: a world and an offline model learned from a log file of sequence, t, arm, reward
rows; bad logs refused in one line, the file's content as its identity, the fits cached."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from nslb_cli.common.errors import ConfigError
from nslb_cli.data import json_cache
from nslb_cli.data.logs import read_logs
from nslb_cli.envs import logged
from nslb_cli.envs.logged import (
    Logged,
    LoggedParams,
    fits,
    load_or_fit,
    offline_model,
    provenance,
)
from nslb_cli.learning import Fit, align_states, posterior

MEANS = np.array([[0.2, 0.5, 0.8], [0.8, 0.4, 0.1]])  # the generating HMM: S = 2, K = 3
TRANSITIONS = np.array([[0.95, 0.05], [0.1, 0.9]])
SIGMA = 0.5


def hmm_logs(sequences: int, rounds: int, seed: int = 0) -> pd.DataFrame:
    """Logs of the generating HMM under a uniform logging policy: ``S_1`` uniform."""
    rng = np.random.default_rng(seed)
    states = np.empty((sequences, rounds), dtype=np.int64)
    states[:, 0] = rng.integers(2, size=sequences)
    for t in range(1, rounds):
        stay = rng.random(sequences) < TRANSITIONS[states[:, t - 1], states[:, t - 1]]
        states[:, t] = np.where(stay, states[:, t - 1], 1 - states[:, t - 1])
    arms = rng.integers(3, size=(sequences, rounds))
    rewards = MEANS[states, arms] + SIGMA * rng.standard_normal((sequences, rounds))
    return pd.DataFrame(
        {
            "sequence": np.repeat(np.arange(sequences), rounds),
            "t": np.tile(np.arange(rounds), sequences),
            "arm": arms.ravel(),
            "reward": rewards.ravel(),
        }
    )


def params(path: Path, **settings: object) -> LoggedParams:
    given = {"n_states": 2, "cache_dir": str(path.parent / "cache"), **settings}
    return LoggedParams(logs=str(path), **given)  # type: ignore[arg-type]


def clicks() -> str:
    """Four sequences of two rounds, arms 0 and 1, rewards 0/1: valid for 2 states."""
    rows = [f"{m},{t},{t},{(m + t) % 2}" for m in range(4) for t in range(2)]
    return "\n".join(["sequence,t,arm,reward", *rows]) + "\n"


BAD_LOGS = {
    "a missing column": ("sequence,t,arm\n0,0,0\n", {}, "logs", "no column reward"),
    "a reward that is not a number": (
        clicks().replace("0,1,1,1", "0,1,1,high"),
        {},
        "logs",
        "reward 'high' in row 2 is not a number whose square is finite",
    ),
    "a reward whose square overflows (EM sums squares)": (
        clicks().replace("0,1,1,1", "0,1,1,1e200"),
        {},
        "logs",
        "reward 1e+200 in row 2 is not a number whose square is finite",
    ),
    "an arm never shown": (
        clicks().replace("1,1,1,0", "1,1,3,0"),
        {"n_arms": 4},
        "n_arms",
        "arm 2 of 0..3 is never shown",
    ),
    "fewer sequences than states": (
        clicks(),
        {"n_states": 3},
        "n_states",
        "halves of 2 (the world's) and 2 (the agents'): each half needs n_states=3",
    ),
    "a round logged twice": (
        clicks().replace("2,1,1,1", "2,0,1,1"),
        {},
        "logs",
        "sequence 2 logs round t=0 twice (rows 5 and 6)",
    ),
    "a Bernoulli reward other than 0 or 1": (
        clicks().replace("3,1,1,0", "3,1,1,0.5"),
        {"reward": "bernoulli"},
        "logs",
        "reward 0.5 in row 8 is not 0 or 1",
    ),
}


@pytest.mark.parametrize("text, settings, key, said", BAD_LOGS.values(), ids=list(BAD_LOGS))
def test_bad_logs_are_refused_in_one_line_naming_what_to_fix(
    tmp_path: Path, text: str, settings: dict[str, object], key: str, said: str
) -> None:
    path = tmp_path / "logs.csv"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        params(path, **settings)
    message = str(caught.value)
    assert caught.value.key == key and "\n" not in message
    assert str(path) in message and said in message, message


def test_the_world_is_the_hmm_fitted_to_one_half(tmp_path: Path) -> None:
    path = tmp_path / "logs.csv"
    hmm_logs(200, 100).to_csv(path, index=False)
    p = params(path)
    found, world = fits(p), Logged.build(p, np.array([4, 5]))
    truth = found.world.parameters
    assert truth.means is not None
    order = align_states(truth.means, MEANS)
    pulls = found.world.counts.pulls
    error = np.abs(truth.means[order] - MEANS)
    assert np.all(error < 4 * SIGMA / np.sqrt(pulls[order])), error  # about 0.05
    assert np.array_equal(world.mean_rewards, truth.means[world.states])
    assert world.problem.reward_model.scale == pytest.approx(SIGMA, abs=0.02)
    told = world.offline_model.means[0]  # the other half's posterior, in the world's labels
    assert np.all(np.abs(told - truth.means) < 4 * SIGMA * np.sqrt(2 / pulls))


def test_the_agents_states_are_relabelled_to_the_worlds(tmp_path: Path) -> None:
    path = tmp_path / "logs.csv"
    hmm_logs(20, 50).to_csv(path, index=False)
    found = fits(params(path))
    truth = found.world.parameters
    swapped = relabelled(found.world, np.array([1, 0]))
    told = offline_model(replace(found, agents=swapped), runs=1)
    expected = posterior(found.world)
    assert not np.allclose(np.asarray(swapped.parameters.means), np.asarray(truth.means))
    assert np.allclose(told.means[0], expected.means)
    assert np.allclose(told.transitions[0], expected.transitions)
    assert np.allclose(told.initial[0], expected.initial)


def relabelled(one: Fit, order: np.ndarray) -> Fit:
    """``one`` with its states relabelled: new state ``s`` is old ``order[s]``."""
    c = one.counts
    counts = replace(
        c,
        initial=c.initial[order],
        transitions=c.transitions[np.ix_(order, order)],
        pulls=c.pulls[order],
        sums=c.sums[order],
        squares=c.squares[order],
        outcomes=c.outcomes[order],
    )
    return replace(one, parameters=one.parameters.reordered(order), counts=counts)


def test_the_worlds_identity_is_the_files_content_not_its_path(tmp_path: Path) -> None:
    frame = hmm_logs(20, 50)
    first, moved = tmp_path / "logs.csv", tmp_path / "elsewhere" / "copy.csv"
    frame.to_csv(first, index=False)
    moved.parent.mkdir()
    moved.write_bytes(first.read_bytes())
    frame.loc[7, "reward"] += 0.25
    edited = tmp_path / "edited.csv"
    frame.to_csv(edited, index=False)
    recorded = [provenance(params(path))["fingerprint"] for path in (first, moved, edited)]
    assert recorded[0] == recorded[1] == hashlib.sha256(first.read_bytes()).hexdigest()
    assert recorded[2] != recorded[0]


def test_parquet_and_csv_in_any_row_order_give_the_same_world(tmp_path: Path) -> None:
    frame = hmm_logs(20, 50)
    frame.to_parquet(tmp_path / "logs.parquet")
    frame.sample(frac=1.0, random_state=0).to_csv(tmp_path / "logs.csv", index=False)
    a, b = (
        Logged.build(params(tmp_path / name), np.arange(3)) for name in ("logs.parquet", "logs.csv")
    )
    for name in ("states", "mean_rewards", "noise"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    for name in ("means", "mean_sd", "transitions", "concentration", "initial"):
        assert np.array_equal(getattr(a.offline_model, name), getattr(b.offline_model, name))


@pytest.mark.parametrize("damage", ["truncated", "a number edited", "other shapes", "no noise"])
def test_the_fits_are_read_from_the_cache_and_a_damaged_entry_is_fitted_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], damage: str
) -> None:
    path = tmp_path / "logs.csv"
    hmm_logs(20, 50).to_csv(path, index=False)
    rounds, digest = read_logs(path), hashlib.sha256(path.read_bytes()).hexdigest()
    settings, root = params(path).settings(), tmp_path / "cache"
    first = load_or_fit(rounds, digest, settings, root)
    stored = json.loads(first.path.read_text())  # plain JSON a user can read
    assert (
        stored["world"]["parameters"]["means"] == np.asarray(first.world.parameters.means).tolist()
    )
    calls: list[int] = []

    def counted(*args: object, **kwargs: object) -> Fit:
        calls.append(1)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    real = logged.fit
    monkeypatch.setattr(logged, "fit", counted)
    again = load_or_fit(rounds, digest, settings, root)
    assert again.hit and not calls
    assert again.world.to_dict() == first.world.to_dict()
    assert again.agents.to_dict() == first.agents.to_dict()
    first.path.write_text(damaged(first.path.read_text(), damage))
    refit = load_or_fit(rounds, digest, settings, root)
    assert not refit.hit and len(calls) == 2  # both halves
    assert "damaged fitted-model cache" in capsys.readouterr().err
    assert refit.world.to_dict() == first.world.to_dict()
    assert load_or_fit(rounds, digest, settings, root).hit  # and written back whole


def damaged(text: str, damage: str) -> str:
    """A cache entry's ``text`` damaged: cut in half, one number changed (its checksum then
    disagrees), or a fit of other shapes, or without its noise, under a checksum that agrees."""
    if damage == "truncated":
        return text[: len(text) // 2]
    if damage == "a number edited":
        return text.replace("0.", "0.9", 1)
    record = json.loads(text)
    if damage == "no noise":  # a Gaussian fit without its sigma
        record["world"]["parameters"]["sigma"] = None
    else:
        record["world"]["parameters"]["means"] = [[0.5]]
    record[json_cache.CHECKSUM_FIELD] = json_cache.checksum(record)
    return json.dumps(record)
