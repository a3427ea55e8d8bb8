"""nslb's Hydra sweeper (:mod:`.sweeper`) and launcher (:mod:`.launcher`)."""
