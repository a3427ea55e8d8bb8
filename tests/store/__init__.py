"""Tests of ``nslb_cli.store``."""
