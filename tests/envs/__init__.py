"""Tests of ``nslb_cli.envs``."""
