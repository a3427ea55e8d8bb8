"""Analysis of results on disk: ``nslb plot`` never simulates, it reads what runs wrote.

One module a step: :mod:`~nslb_cli.plot.tidy` loads, :mod:`~nslb_cli.plot.labels` names,
:mod:`~nslb_cli.plot.selection` selects, :mod:`~nslb_cli.plot.aggregate` computes,
:mod:`~nslb_cli.plot.figures`, :mod:`~nslb_cli.plot.paper` and :mod:`~nslb_cli.plot.tables`
draw and write; :mod:`~nslb_cli.plot.report` is ``nslb plot DIR`` and
:mod:`~nslb_cli.plot.notebook` the same results as pandas frames (pyproject.toml's layers say
what it may import).
"""
