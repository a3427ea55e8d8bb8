"""A sweep's jobs, each checked before any runs (``check_sweep``, called by nslb's
sweeper), the grids a preset declares (``preset_grids``), and the order nslb's launcher runs
them in."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any

from hydra.core.config_store import ConfigStore
from hydra.core.override_parser.types import ChoiceSweep, IntervalSweep, Override, RangeSweep
from omegaconf import DictConfig

from nslb_cli.agents import AGENTS
from nslb_cli.common.apart import Ended, run_apart
from nslb_cli.common.errors import ConfigError
from nslb_cli.envs import ENVIRONMENTS
from nslb_cli.runner import memory
from nslb_cli.runner.config import validate
from nslb_cli.runner.engines import ENGINES
from nslb_cli.runner.overrides import COMPOSING, GROUPS, one_line

PLUGIN_SECONDS = 60.0  # a plugin's Params and memory declaration: the most a check may take
Compose = Callable[[list[str]], DictConfig]
"""Hydra's config of the job of a list of overrides."""


@dataclass
class SweeperSettings:
    """``hydra.sweeper`` of a sweep (``hydra/sweeper=nslb``, conf/hydra/sweeper/nslb.yaml):
    Hydra's basic sweeper's settings, and ``grids``: further grids, each a mapping like
    ``params``, whose jobs follow those of ``params`` (``preset_grids``). Stored on import
    here, as every composition of a sweep needs it."""

    _target_: str = "hydra_plugins.nslb_sweep.sweeper.NslbSweeper"
    max_batch_size: int | None = None
    params: dict[str, str] | None = None
    grids: list[dict[str, str]] = field(default_factory=list)


ConfigStore.instance().store(
    group="hydra/sweeper", name="nslb_settings", node=SweeperSettings, provider="nslb"
)


def preset_grids(sweeper: Mapping[str, Any]) -> list[list[str]]:
    """The grids of a sweeper's settings as override lines: ``params``, then each mapping of
    ``grids``. A sweep's jobs are each grid's product with the command line's overrides (which
    replace a grid's value of the same key), the grids' jobs one after another: a preset runs
    jobs that no single grid holds (one reference run beside a grid of others) without the
    grid's repeats of it."""
    grids = [sweeper.get("params") or {}, *(sweeper.get("grids") or [])]
    return [[f"{key}={value}" for key, value in grid.items()] for grid in grids]


def check_sweep(jobs: Sequence[list[str]], composed: Compose) -> list[DictConfig]:
    """Check every job of ``jobs`` (``check_job``); return their configs. Raise
    ``ConfigError`` naming the first bad job."""
    return [check_job(composed, job, jobs) for job in jobs]


def check_job(composed: Compose, job: list[str], jobs: Sequence[list[str]]) -> DictConfig:
    """Validate the config ``composed(job)`` of one job of ``jobs`` and check that a batch of
    its seeds fits in memory; raise ``ConfigError`` naming the job (plugins': apart)."""
    try:
        config = composed(job)
        if _of_plugin(config):
            run_apart(lambda: _check_values(config), "the check of its values", PLUGIN_SECONDS)
        _check_values(config)
    except ConfigError as err:
        raise _in_job(err, job, jobs) from None
    except Ended as err:
        raise _in_job(ConfigError("agent", str(err)), job, jobs) from None
    except COMPOSING as err:
        raise _in_job(ConfigError("overrides", one_line(err)), job, jobs) from None
    return config


def _check_values(composed: DictConfig) -> None:
    """``validate`` a job's config and check that a batch of its seeds fits in memory."""
    config = validate(composed)
    batch = min(config.run.batch_size, config.run.n_seeds)
    reason = memory.too_many_seeds(config.run.n_seeds) or memory.too_large(
        config.env, config.agent, batch, config.engine, config.run.every
    )
    if reason:
        raise ConfigError("memory", reason)


def plan_sweep(configs: Sequence[DictConfig]) -> tuple[list[int], AbstractContextManager[None]]:
    """The order to run a sweep's jobs in (indices into ``configs``), and the block to run them in.

    Jobs that differ only in traced parameters run one after another (``grouped_order``), and
    plugins' jobs first: a child cannot be forked once the JAX engine ran. With ``run.fail_fast``
    the jobs keep Hydra's order, so that a failure skips the jobs numbered after it.
    """
    order = list(range(len(configs)))
    planned, jobs = [], []
    for at, config in enumerate(configs):
        named = ENGINES.get(str(config.run.get("engine")))
        if named is None or not named.shares_batches:  # a bad name is refused in its turn
            continue
        try:
            checked = validate(config)
        except ConfigError:
            continue
        planned.append(at)
        jobs.append((checked.env, checked.agent, (checked.run.batch_size, checked.run.every)))
        engine = checked.engine  # the engine that shares batches (there is one)
    if not jobs:
        return order, nullcontext()
    if not any(config.run.get("fail_fast", False) for config in configs):
        labels: list[object] = list(order)  # each job a group of its own
        for at, key in zip(planned, engine.group_keys(jobs), strict=True):
            if key is not None:
                labels[at] = key
        # plugins' jobs run in forked children: first, before this process runs the JAX engine
        ran_apart = [_of_plugin(config) for config in configs]
        order = sorted(grouped_order(labels), key=lambda at: not ran_apart[at])
    turn = {at: job for at, job in zip(planned, jobs, strict=True)}
    every = min(kept for _, _, (_, kept) in jobs)  # the fewest rounds skipped: cautious
    fits = lambda env, agent, n: memory.too_large(env, agent, n, engine, every) is None  # noqa: E731
    return order, engine.sharing([turn[at] for at in order if at in turn], fits)


def grouped_order(labels: Sequence[object]) -> list[int]:
    """The order in which to run jobs labelled ``labels``, a group's label each: each group's jobs
    one after another, from its first job's turn, in their order."""
    first: dict[object, int] = {}
    for at, label in enumerate(labels):
        first.setdefault(label, at)
    return sorted(range(len(labels)), key=lambda at: first[labels[at]])


def _of_plugin(config: DictConfig) -> bool:
    """Whether the environment or agent of ``config`` comes from a plugin (not nslb)."""
    sections = [(ENVIRONMENTS, config.get("env")), (AGENTS, config.get("agent"))]
    names = [(r, n.get("name")) for r, n in sections if isinstance(n, DictConfig)]
    return any(name in r and r.foreign(str(name)) for r, name in names)


def _in_job(err: ConfigError, job: list[str], jobs: Sequence[list[str]]) -> ConfigError:
    if len(jobs) == 1:
        return err
    return ConfigError(err.key, f"{err.message} (in sweep job {' '.join(job)})")


def size(parsed: list[Override]) -> int:
    """How many jobs Hydra's basic sweeper makes of ``parsed``: the product of each key's number
    of values. An interval, which only a study takes, is refused naming its key."""
    counts: dict[str, int] = {}
    for override in parsed:
        key = override.get_key_element()
        if override.is_sweep_override() and not override.is_discrete_sweep():
            raise ConfigError(
                key,
                f"'{override.input_line}': a sweep takes a list or range(…); interval(…) is "
                "a study's search space (hparams_search=…)",
            )
        swept = override.is_sweep_override()
        counts[key] = len(list(override.sweep_string_iterator())) if swept else 1
    return math.prod(counts.values())


def study_points(parsed: list[Override]) -> list[list[str]]:
    """The jobs that stand for an Optuna study's search space: every parameter at its lower
    end, then each parameter in turn at each of its other ends (or choices)."""
    fixed = [o.input_line for o in parsed if not o.is_sweep_override() and o.input_line]
    ends: dict[str, list[str]] = {}
    for override in (o for o in parsed if o.is_sweep_override()):
        key, value = override.get_key_element(), override.value()
        if key in GROUPS:
            raise ConfigError(
                key,
                f"a study tunes one {key}, but the command line (or its experiment preset) "
                f"sweeps {key} over several: drop the list or the preset",
            )
        if isinstance(value, IntervalSweep):
            ends[key] = [str(value.start), str(value.end)]
        elif isinstance(value, RangeSweep):
            ends[key] = [str(value.start), str(value.stop)]
        elif isinstance(value, ChoiceSweep):
            ends[key] = [str(choice) for choice in value.list]
        else:
            raise ConfigError(key, f"'{override.input_line}' is not a search space Optuna takes")
    lows = {key: values[0] for key, values in ends.items()}
    points = [lows] + [{**lows, key: value} for key, values in ends.items() for value in values[1:]]
    return [fixed + [f"{k}={v}" for k, v in point.items()] for point in points]
