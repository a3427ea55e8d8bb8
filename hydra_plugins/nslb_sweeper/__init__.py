"""nslb's Hydra sweeper (:mod:`hydra_plugins.nslb_sweeper.nslb_sweeper`)."""
