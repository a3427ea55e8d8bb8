"""The files nslb writes into a run folder, and how they are read back (docs/design.md §6).

* :mod:`~nslb_cli.store.run_folder` — a job's writing of its run folder, every step in its
  order (lock, resume, claim, batches, provenance, seal, overwrite), in one object;
* :mod:`~nslb_cli.store.results` — the run folder's layout (``seed=K.csv``, ``seed=K.json``,
  ``config.yaml``), writing a trace's CSVs, integrity records, claims of a folder;
* :mod:`~nslb_cli.store.atomic` — files written whole or not at all (temporary file, fsync,
  rename), and the temporaries a killed writer left behind;
* :mod:`~nslb_cli.store.provenance` — which code and command wrote a folder's results.

May import: :mod:`nslb_cli.bandit`, :mod:`nslb_cli.common`. Knows nothing of how results are
simulated (no runner, agents or environments) or plotted.
"""
