"""Tests of ``nslb_cli.bandit``."""
