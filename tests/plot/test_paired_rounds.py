"""What a figure shows besides means (issue 50): paired differences to the reference round by
round, and the world's true change points where they are the same on every seed."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest

from nslb_cli.plot import aggregate, tidy
from nslb_cli.plot.aggregate import METRICS
from tests.helpers.results_tree import SMALL, write_run
from tests.plot import hand


def labelled(root: Path, columns: tuple[str, ...] = ("cum_regret", "cum_reward")) -> pd.DataFrame:
    loaded = tidy.load(root, columns, join_config=False)
    return aggregate.labelled(loaded.frame, loaded.runs)[0]


def test_paired_differences_per_round_by_hand(tmp_path: Path) -> None:
    # hand.write_seed: cum_regret at round t of 4 is final * t / 4; cum_reward likewise.
    # Round 4: Random - mTS = 10 - 4 = 6 (seed 0), 9 - 6 = 3 (seed 1); seed 2 is Random's alone.
    #   mean 4.5, SE = sd(6, 3) / sqrt(2) = 2.1213 / 1.4142 = 1.5, 2 pairs.
    # Round 2: 5 - 2 = 3, 4.5 - 3 = 1.5: mean 2.25, SE 0.75.
    # Average reward at round 4: (1 - 3) / 4 = -0.5 and (2 - 3) / 4 = -0.25: mean -0.375.
    hand.write_run(tmp_path / "mts", hand.config("e", "mts"), {0: (4.0, 3.0), 1: (6.0, 3.0)})
    finals = {0: (10.0, 1.0), 1: (9.0, 2.0), 2: (5.0, 2.0)}
    hand.write_run(tmp_path / "random", hand.config("e", "random"), finals)
    hand.write_run(tmp_path / "other", hand.config("f", "random"), {0: (1.0, 1.0)})
    frame = labelled(tmp_path)
    references = {"e": "mTS", "f": None}
    paired = aggregate.paired_per_round(frame, METRICS["cum_regret"], references)
    assert set(paired["group"].astype(str)) == {"e"}, "a group without a reference: none"
    assert set(paired["agent"].astype(str)) == {"Random"}, "the reference is the zero line"
    by_round = paired.set_index("t")
    assert by_round.loc[4, "mean"] == pytest.approx(4.5) and by_round.loc[4, "n"] == 2
    assert by_round.loc[4, "se"] == pytest.approx(1.5)
    assert by_round.loc[2, "mean"] == pytest.approx(2.25)
    assert by_round.loc[2, "se"] == pytest.approx(0.75)
    reward = aggregate.paired_per_round(frame, METRICS["avg_reward"], references)
    assert reward.set_index("t").loc[4, "mean"] == pytest.approx(-0.375)


def test_true_change_points_are_found_where_every_seed_has_them(tmp_path: Path) -> None:
    """Fixed dynamics change every period (20 rounds here: 0-based rounds 20 and 40, rounds
    21 and 41 in the CSV) on every seed; Markov changes differ by seed: no lines."""
    fixed = replace(SMALL, dynamics="fixed")
    write_run(tmp_path / "fixed/mts", "mts", [0, 1], fixed, name="fixed")
    write_run(tmp_path / "fixed/random", "random", [0, 1], fixed, name="fixed")
    write_run(tmp_path / "markov/mts", "mts", [0, 1, 2], SMALL, name="markov")
    write_run(tmp_path / "alone/mts", "mts", [0], SMALL, name="alone")
    found = aggregate.change_points(labelled(tmp_path, ("cum_regret", "state")))
    assert found == {"fixed": (21, 41)}, "none for markov, none from a single seed"


def test_thinned_rounds_mark_no_change_they_cannot_place(tmp_path: Path) -> None:
    """Rounds kept every 7th (``run.every=7``): the change at round 21 is seen first at round
    28, so no line is drawn there (it would say the world changed at 28)."""
    fixed = replace(SMALL, dynamics="fixed")
    for agent in ("mts", "random"):
        write_run(tmp_path / agent, agent, [0, 1], fixed, name="fixed")
    frame = labelled(tmp_path, ("cum_regret", "state"))
    assert aggregate.change_points(frame[frame["t"] % 7 == 0]) == {"fixed": ()}
