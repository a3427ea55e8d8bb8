"""nslb's test suite: one folder per package of ``nslb_cli``, shared helpers in ``helpers``."""
