"""Tests of ``nslb_cli.core``."""
