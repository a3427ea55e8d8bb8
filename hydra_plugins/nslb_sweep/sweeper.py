"""nslb's sweeper: Hydra's basic sweeper over one grid or several, every job of the sweep
checked before any runs (docs/design.md §8). ``BasicSweeper`` is the one class nslb takes from
``hydra._internal``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Override

from hydra_plugins.nslb_sweep.launcher import NslbLauncher


class NslbSweeper(BasicSweeper):
    """Hydra's basic sweep (the product of each key's values) of ``params`` and of each of
    ``grids`` in turn, every job checked first."""

    def __init__(
        self,
        max_batch_size: int | None,
        params: Mapping[str, str] | None = None,
        grids: Sequence[Mapping[str, str]] | None = None,
    ) -> None:
        super().__init__(max_batch_size, dict(params or {}))
        self.grids = [dict(grid) for grid in grids or ()]
        self.jobs: list[list[str]] = []  # every grid's, made by ``sweep``

    def sweep(self, arguments: list[str]) -> Any:
        """Check every job of each grid with ``arguments`` (the command line's overrides but
        Hydra's own), then sweep them as the basic sweeper does."""
        from nslb_cli.runner.sweep import check_sweep, preset_grids  # here: Hydra imports plugins

        assert self.hydra_context is not None and self.config is not None
        loader, config = self.hydra_context.config_loader, self.config
        parser = OverridesParser.create(config_loader=loader)
        grids = preset_grids({"params": self.params, "grids": self.grids})
        split = BasicSweeper.split_arguments  # each grid's product, in one batch
        self.jobs = [
            job for g in grids for job in split(parser.parse_overrides(g + arguments), None)[0]
        ]
        configs = check_sweep(self.jobs, lambda job: loader.load_sweep_config(config, job))
        if isinstance(self.launcher, NslbLauncher):
            self.launcher.composed = dict(enumerate(configs))
        return super().sweep(arguments)

    def split_arguments(  # type: ignore[override]  # Hydra's is static: it needs no grids
        self, overrides: list[Override], max_batch_size: int | None
    ) -> list[list[list[str]]]:
        """The batches of the jobs ``sweep`` made of every grid, ``max_batch_size`` at a time
        (Hydra's basic sweep asks for those of ``params`` and the command line alone)."""
        return list(self.split_overrides_to_chunks(self.jobs, max_batch_size))

    def validate_batch_is_legal(self, batch: Sequence[Sequence[str]]) -> None:
        """Nothing more: ``sweep`` composed and checked every job before the first batch."""
