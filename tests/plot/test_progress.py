"""Progress lines of a long ``nslb plot``, on an injected clock: none for a fast plot."""

from __future__ import annotations

from nslb_cli.plot.progress import Progress


def test_lines_come_past_the_threshold_and_at_most_one_every_interval() -> None:
    now = [100.0]
    said: list[str] = []
    progress = Progress(said.append, after=3.0, every=2.0, clock=lambda: now[0])
    for t, done in ((101.0, 1000), (102.9, 2000), (103.0, 3000), (104.5, 4000), (105.0, 5000)):
        now[0] = t
        progress.step("read", done, 9000, "seed files")
    assert said == ["read 3,000 of 9,000 seed files", "read 5,000 of 9,000 seed files"]


def test_a_fast_plot_says_nothing() -> None:
    said: list[str] = []
    progress = Progress(said.append, clock=lambda: 0.0)
    for done in range(40):
        progress.step("drew", done, 40, "figures")
    assert said == []


def test_no_line_unless_shown() -> None:
    """stderr no terminal (a log, a test): silent however long it takes."""
    said: list[str] = []
    now = [0.0]
    progress = Progress(said.append, shown=False, after=0.0, every=0.0, clock=lambda: now[0])
    for done in range(3):
        now[0] += 10.0
        progress.step("read", done, 3, "seed files")
    assert said == []
