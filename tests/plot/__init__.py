"""Tests of ``nslb_cli.plot``."""
