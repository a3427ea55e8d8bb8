"""The files nslb writes into a run folder, and how they are read back (docs/design.md §6);
may import only :mod:`nslb_cli.bandit` and :mod:`nslb_cli.common` (§8)."""
