"""The files nslb writes into a run folder, and how they are read back (docs/design.md §6);
may import only ``nslb_cli.bandit`` and ``nslb_cli.common`` (§8)."""
