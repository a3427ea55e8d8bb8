"""nslb's sweeper: Hydra's basic sweeper, every job of the sweep checked before any runs
(docs/design.md §8). ``BasicSweeper`` is the one class nslb takes from ``hydra._internal``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.override_parser.overrides_parser import OverridesParser

from hydra_plugins.nslb_sweep.launcher import NslbLauncher


class NslbSweeper(BasicSweeper):
    """Hydra's basic sweep (the product of each key's values), every job checked first."""

    def sweep(self, arguments: list[str]) -> Any:
        """Check every job of ``hydra.sweeper.params`` and ``arguments`` (the command line's
        overrides but Hydra's own), then sweep them as the basic sweeper does."""
        from nslb_cli.runner.sweep import check_sweep  # here: Hydra imports every plugin

        assert self.hydra_context is not None and self.config is not None
        loader, config = self.hydra_context.config_loader, self.config
        params = [f"{key}={value}" for key, value in self.params.items()]
        parser = OverridesParser.create(config_loader=loader)
        (jobs,) = self.split_arguments(parser.parse_overrides(params + arguments), None)
        configs = check_sweep(jobs, lambda job: loader.load_sweep_config(config, job))
        if isinstance(self.launcher, NslbLauncher):
            self.launcher.composed = dict(enumerate(configs))
        return super().sweep(arguments)

    def validate_batch_is_legal(self, batch: Sequence[Sequence[str]]) -> None:
        """Nothing more: ``sweep`` composed and checked every job before the first batch."""
