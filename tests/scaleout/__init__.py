"""Tests of scale-out: nslb sweeps through Hydra's cluster launchers."""
