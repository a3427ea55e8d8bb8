"""Tests of ``nslb_cli.cli``."""
