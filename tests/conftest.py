"""Shared pytest fixtures (helper functions live in :mod:`tests.helpers`)."""

from __future__ import annotations

import pytest

from nslb_cli.envs.synthetic import SyntheticParams


@pytest.fixture
def small_env() -> SyntheticParams:
    return SyntheticParams(horizon=150, period=50, switch_prob=0.02)
