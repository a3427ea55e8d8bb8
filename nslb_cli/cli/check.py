"""``nslb check agent=NAME [key=value ...]``: the conformance checks of one agent, one line each.

Without ``env=NAME`` the agent is checked on ``DEFAULT_ENVS``.
Exit status: 0 when every check passes, 1 when one fails, 2 for bad input.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import HydraException

from nslb_cli.agents import AGENTS
from nslb_cli.cli.errors import fail, warn
from nslb_cli.common.apart import Ended, run_apart
from nslb_cli.envs import ENVIRONMENTS
from nslb_cli.runner.compose import load, register_options
from nslb_cli.runner.conformance import (
    ALONE,
    DEFAULT_ENVS,
    SEEDS,
    STEP_SECONDS,
    Setting,
    run_checks,
)


def _keys(overrides: Sequence[str]) -> list[str]:
    try:
        parsed = OverridesParser.create().parse_overrides(list(overrides))
    except HydraException as err:
        fail(f"overrides: {str(err).splitlines()[0]}")
    if any(o.is_sweep_override() for o in parsed):
        fail("nslb check runs one configuration: give single values, not sweeps")
    return [o.get_key_element() for o in parsed]


def _as_overrides(values: dict[str, Any]) -> list[str]:
    """``{"name": "synthetic", "horizon": 120}`` as ``env=synthetic env.horizon=120``."""
    rendered = {k: "null" if v is None else str(v) for k, v in values.items()}
    return [f"env={rendered.pop('name')}", *(f"env.{k}={v}" for k, v in rendered.items())]


def main(arguments: Sequence[str]) -> None:
    """Run the checks; exit with status 1 if one fails."""
    if not arguments or any(a.startswith("-") for a in arguments):
        fail("usage: nslb check agent=NAME [agent.key=value ...] [env=NAME] [env.key=value ...]")
    keys = _keys(arguments)
    if "agent" not in keys:
        fail("say which agent to check: nslb check agent=NAME")
    for problem in register_options(arguments):
        warn(problem)
    user = list(arguments)
    runs = [user] if "env" in keys else [_as_overrides(env) + user for env in DEFAULT_ENVS]
    configs = [load(overrides) for overrides in runs]  # a ConfigError: the dispatcher's line
    name = configs[0].agent.name
    settings = [Setting(ENVIRONMENTS[c.env.name], c.env) for c in configs]
    seeds = ", ".join(map(str, SEEDS))
    print(f"nslb check: {AGENTS.describe(name)}, seeds {seeds} in one batch and {ALONE} alone, on")
    for setting in settings:
        print(f"  {setting.label}")
    agent = AGENTS[name]
    try:
        outcomes = run_apart(
            lambda: run_checks(agent, configs[0].agent, settings), "the checks", STEP_SECONDS
        )
    except Ended as err:
        print(f"nslb: {AGENTS.describe(name)}: {err}", file=sys.stderr)
        raise SystemExit(1) from None
    for outcome in outcomes:
        print(outcome.line())
    failed = [o for o in outcomes if o.status == "FAIL"]
    skipped = [o for o in outcomes if o.status == "skip"]
    if failed or skipped:
        print(f"{len(failed)} of {len(outcomes)} checks failed, {len(skipped)} not checked")
        raise SystemExit(1)
    print(f"all {len(outcomes)} checks passed")
