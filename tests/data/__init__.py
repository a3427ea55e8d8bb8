"""Tests of ``nslb_cli.data``."""
