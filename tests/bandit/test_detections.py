"""Detections matched to the true changes: true detections, delays, false alarms, misses."""

from __future__ import annotations

import numpy as np

from nslb_cli.bandit.detections import DETECTION_WINDOW, AlarmLog, change_rounds, score


def test_change_rounds_are_the_first_rounds_of_a_new_state_numbered_from_one() -> None:
    assert change_rounds(np.array([0, 0, 1, 1, 0, 0])) == [3, 5]
    assert change_rounds(np.array([2, 2, 2])) == []


def test_each_change_is_found_once_and_later_alarms_are_false() -> None:
    scored = score([100, 210, 215, 450, 700], [201, 401, 601])
    assert scored.delays == [9, 49, 99]  # 100 before any change, 215 a second alarm: false
    assert scored.false_alarms == 2 and scored.missed == 0


def test_an_alarm_in_the_change_round_has_delay_zero() -> None:
    assert score([201], [201]).delays == [0]


def test_a_change_not_found_before_the_next_one_is_missed() -> None:
    scored = score([25], [10, 20])
    assert scored.delays == [5] and scored.false_alarms == 0 and scored.missed == 1


def test_an_alarm_too_long_after_a_change_is_false_and_the_change_missed() -> None:
    late = score([1 + DETECTION_WINDOW], [1])
    assert late.delays == [] and late.false_alarms == 1 and late.missed == 1
    assert score([DETECTION_WINDOW], [1]).delays == [DETECTION_WINDOW - 1]


def test_without_a_change_every_alarm_is_false() -> None:
    scored = score([5, 9], [])
    assert scored.delays == [] and scored.false_alarms == 2 and scored.missed == 0


def test_the_log_notes_rounds_from_counters_and_scores_them_per_run() -> None:
    log = AlarmLog(np.zeros(3))
    log.note(4, np.array([1.0, 0.0, 1.0]))  # round 5 in the files
    log.note(9, np.array([2.0, 0.0, 2.0]))
    states = np.array([[0] * 4 + [1] * 8, [0] * 12, [0] * 9 + [1] * 3])
    summary = log.summary(states)
    assert summary["detection_rounds"].shape == (3,)  # equal lengths stay lists
    assert summary["detection_rounds"].tolist() == [[5, 10], [], [5, 10]]
    assert summary["detection_delays"].tolist() == [[0], [], [0]]
    assert summary["false_alarms"].tolist() == [1, 0, 1]
    assert summary["missed_changes"].tolist() == [0, 0, 0]
    assert summary["mean_delay"].tolist() == [0.0, None, 0.0]  # no change: no delay, no NaN


def test_without_a_latent_path_only_the_rounds_are_recorded() -> None:
    log = AlarmLog(np.zeros(1, dtype=np.int64))
    log.note(0, np.array([1]))
    assert list(log.summary(None)) == ["detection_rounds"]
