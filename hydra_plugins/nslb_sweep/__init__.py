"""nslb's Hydra sweeper (``.sweeper``) and launcher (``.launcher``)."""
