"""Tests of ``nslb_cli.agents.umts``."""
