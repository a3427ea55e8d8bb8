"""Tests of ``nslb_cli.runner``."""
