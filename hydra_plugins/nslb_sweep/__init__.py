"""nslb's Hydra sweepers (``.sweeper``: a sweep; ``.optuna_sweeper``: a study) and launcher
(``.launcher``)."""
