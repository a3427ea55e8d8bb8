"""The order in which a process runs a sweep's jobs (sweep.grouped_order)."""

from __future__ import annotations

from nslb_cli.runner.sweep import grouped_order


def test_a_groups_jobs_run_in_a_row_from_its_first_jobs_turn() -> None:
    """Jobs labelled by their group (a job alone: a label of its own) run each group's jobs
    one after another, the groups and lone jobs in the order of their first jobs."""
    assert grouped_order(["a", 1, "b", "a", 4, "b"]) == [0, 3, 1, 2, 5, 4]
    assert grouped_order([0, 1, 2]) == [0, 1, 2]  # no group: Hydra's order
