"""Analysis of results on disk: ``nslb plot`` never simulates, it reads what runs wrote.

The pipeline runs one way, one module a step: :mod:`~nslb_cli.plot.tidy` loads (CSV by
:mod:`~nslb_cli.plot.csvread`, Parquet by :mod:`~nslb_cli.plot.parquetread`, runs named by
:mod:`~nslb_cli.plot.identity`); :mod:`~nslb_cli.plot.labels` names groups and agents;
:mod:`~nslb_cli.plot.selection` keeps the agents and rounds asked for;
:mod:`~nslb_cli.plot.aggregate` computes mean ± SE, finals and paired differences;
:mod:`~nslb_cli.plot.figures`, :mod:`~nslb_cli.plot.paper` and :mod:`~nslb_cli.plot.tables`
draw and write (through :mod:`~nslb_cli.plot.render`); :mod:`~nslb_cli.plot.report` is the
whole report of ``nslb plot DIR``. :mod:`~nslb_cli.plot.notebook` gives the same results to
notebooks as pandas frames, without plotting libraries.

May import :mod:`nslb_cli.store` and :mod:`nslb_cli.common`; never the runner, the agents, the
environments or the data (pyproject.toml's layers).
"""
