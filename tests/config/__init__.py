"""Tests of ``nslb_cli.config``."""
