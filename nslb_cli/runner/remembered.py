"""Hydra's compositions remembered for the length of one ``nslb run``.

``nslb run`` composes every job twice: the command-line check composes and validates each
before anything runs (:func:`~nslb_cli.runner.compose.check_command_line`), then Hydra's
launcher composes each again to run it, about 0.05 s a composition (a preset's five jobs:
0.25 s of every ``make paper`` process). :class:`RememberedCompositions` stands in for
``ConfigLoaderImpl.load_configuration`` and gives a composition asked for again a copy of
the first.

Two requests are the same composition when they name the same config and run mode and the
same Hydra overrides (``hydra.*``, ``hydra/…``) and the same others, each kind in its order:
the check puts a job's Hydra overrides last, the launcher first. Hydra composes the defaults
of all group choices at once, then sets the values in order, and an override of one kind
never touches a key of the other, so the interleaving cannot change the result; Hydra
records the two kinds in two lists (``hydra.overrides.hydra`` and ``.task``). A request
that adds Hydra values at the end (``hydra.mode=RUN``, which Hydra appends to a single
run's overrides) gets the remembered composition with those values set as Hydra sets them,
and recorded after the others. A composition that was not validated
(``validate_sweep_overrides``) is not given to a request that asks for validation, and a
failed one is not remembered. A multirun's request is given a single run's validated
composition of the same overrides (the master config of ``nslb run experiment=paper/…``,
composed first by the check): the run mode changes only how sweeps are validated, which a
validated single run has none of, and whether a group without a default is skipped, which
a single run that composed has none of. Neither remembered nor served is a request that
sets the whole Hydra node (``hydra={job: {name: x}}``): Hydra counts it among the others,
so its order against ``hydra.*`` values decides which wins.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator
from typing import Any

from hydra._internal.config_loader_impl import ConfigLoaderImpl
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Override
from hydra.errors import HydraException
from hydra.types import RunMode
from omegaconf import DictConfig

Key = tuple[Any, ...]
REMEMBERED = 64  # compositions kept at most (a study's trials are composed one by one)


def _hydra_value(override: Override) -> bool:
    """Whether ``override`` only sets a value in the Hydra node (``hydra.mode=RUN``)."""
    key = override.get_key_element()
    plain = not (override.is_add() or override.is_delete() or override.package is not None)
    return plain and override.is_hydra_override() and "." in key and "/" not in key


def _key(config_name: str | None, run_mode: RunMode, parsed: list[Override]) -> Key:
    hydras = tuple(o.input_line for o in parsed if o.is_hydra_override())
    others = tuple(o.input_line for o in parsed if not o.is_hydra_override())
    return config_name, run_mode, hydras, others


class RememberedCompositions:
    """A stand-in for ``ConfigLoaderImpl.load_configuration`` (``hydras``: the original)
    that remembers what it composed."""

    def __init__(self, hydras: Any) -> None:
        self._hydras = hydras
        self._parser = OverridesParser.create()
        self._composed: dict[Key, tuple[DictConfig, bool]] = {}

    def __call__(
        self,
        loader: ConfigLoaderImpl,
        config_name: str | None,
        overrides: list[str],
        run_mode: RunMode,
        from_shell: bool = True,
        validate_sweep_overrides: bool = True,
    ) -> DictConfig:
        try:
            parsed: list[Override] | None = self._parser.parse_overrides(overrides)
        except HydraException:  # Hydra's own composition reports it
            parsed = None
        if parsed is not None and any(o.key_or_group == "hydra" for o in parsed):
            parsed = None  # ``hydra={…}`` sets the Hydra node as an other: order matters
        if parsed is not None:
            found = self._remembered(config_name, run_mode, parsed, validate_sweep_overrides)
            if found is not None:
                return found
        config = self._hydras(
            loader, config_name, overrides, run_mode, from_shell, validate_sweep_overrides
        )
        if parsed is not None and len(self._composed) < REMEMBERED:
            key = _key(config_name, run_mode, parsed)
            self._composed[key] = (copy.deepcopy(config), validate_sweep_overrides)
        return config

    def _remembered(
        self, config_name: str | None, run_mode: RunMode, parsed: list[Override], validate: bool
    ) -> DictConfig | None:
        """A copy of the composition of ``parsed``, or of ``parsed`` less trailing Hydra
        values with those set; ``None`` when neither was composed (and validated if asked)."""
        end = len(parsed)
        while True:
            found = self._composed.get(_key(config_name, run_mode, parsed[:end]))
            if found is None and run_mode == RunMode.MULTIRUN:
                found = self._composed.get(_key(config_name, RunMode.RUN, parsed[:end]))
                found = found if found is not None and found[1] else None  # validated only
            if found is not None and (found[1] or not validate):
                config = copy.deepcopy(found[0])
                ConfigLoaderImpl._apply_overrides_to_config(parsed[end:], config)
                config.hydra.overrides.hydra.extend([o.input_line for o in parsed[end:]])
                return config
            if end == 0 or not _hydra_value(parsed[end - 1]):
                return None
            end -= 1


@contextlib.contextmanager
def remembered_compositions() -> Iterator[None]:
    """Within the block, Hydra composes each config once (:class:`RememberedCompositions`)."""
    compositions = RememberedCompositions(ConfigLoaderImpl.load_configuration)
    original = ConfigLoaderImpl.load_configuration
    ConfigLoaderImpl.load_configuration = (  # type: ignore[method-assign]
        lambda self, *args, **kwargs: compositions(self, *args, **kwargs)
    )
    try:
        yield
    finally:
        ConfigLoaderImpl.load_configuration = original  # type: ignore[method-assign]
