"""Shared pytest fixtures (helper functions live in ``tests.helpers``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from nslb_cli.common.stopping import forget
from nslb_cli.envs.synthetic import SyntheticParams


@pytest.fixture(autouse=True)
def _no_request_to_stop_outlives_its_test() -> Iterator[None]:
    """A request to stop recorded by one test (a signal, an in-process command) is raised by
    the next round loop of any later test in the process: forget it when the test ends."""
    yield
    forget()


@pytest.fixture
def small_env() -> SyntheticParams:
    return SyntheticParams(horizon=150, period=50, switch_prob=0.02)
