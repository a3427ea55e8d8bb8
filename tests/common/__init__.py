"""Tests of ``nslb_cli.common``."""
