"""Analysis of results on disk: ``nslb plot`` never simulates, it reads what runs wrote.

The pipeline runs one way, one module a step:

* :mod:`~nslb_cli.plot.tidy` — load the per-seed CSVs and the config beside them;
* :mod:`~nslb_cli.plot.labels` — name groups (experiment and environment) and agents;
* :mod:`~nslb_cli.plot.aggregate` — mean ± standard error per round, finals, paired
  differences;
* :mod:`~nslb_cli.plot.figures` and :mod:`~nslb_cli.plot.tables` — draw and write them;
* :mod:`~nslb_cli.plot.report` — the whole report of ``nslb plot DIR``.

It depends on :mod:`nslb_cli.results` (the file layout) and never on the simulator, the
agents or the environments (an import-linter contract in pyproject.toml checks this).
"""
