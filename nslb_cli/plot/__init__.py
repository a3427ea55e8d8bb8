"""Analysis of results on disk: ``nslb plot`` never simulates, it reads what runs wrote.

The pipeline runs one way, one module a step:

* :mod:`~nslb_cli.plot.tidy` — load the per-seed CSVs (parsed by
  :mod:`~nslb_cli.plot.csvread`) or Parquet files (:mod:`~nslb_cli.plot.parquetread`) and the
  config beside them; runs are resolved configs, their data named by
  :mod:`~nslb_cli.plot.identity`;
* :mod:`~nslb_cli.plot.labels` — name groups (experiment, environment and data) and agents;
* :mod:`~nslb_cli.plot.selection` — keep the agents and rounds asked for, or refuse them in one
  line (:class:`~nslb_cli.plot.selection.PlotError`);
* :mod:`~nslb_cli.plot.aggregate` — mean ± standard error per round, finals, paired
  differences;
* :mod:`~nslb_cli.plot.figures` (in :mod:`~nslb_cli.plot.styles` and the
  :mod:`~nslb_cli.plot.layout` that keeps axes their size), :mod:`~nslb_cli.plot.paper` (the
  paper's figures) and :mod:`~nslb_cli.plot.tables` — draw and write them, the figures
  through :mod:`~nslb_cli.plot.render`;
* :mod:`~nslb_cli.plot.report` — the whole report of ``nslb plot DIR``, with the
  hyperparameter studies under DIR (:mod:`~nslb_cli.plot.study`).

:mod:`~nslb_cli.plot.notebook` gives the same results to notebooks as pandas frames
(``load_results``, ``summarise``; exported as ``nslb_cli.load_results``); it imports no
plotting library.

May import: :mod:`nslb_cli.store` (the files and their layout) and :mod:`nslb_cli.common`;
never the runner, the agents, the environments or the data (the layers contract in
pyproject.toml checks this).
"""
