"""Analysis of results on disk: ``nslb plot`` never simulates, it reads what runs wrote.

One module a step: ``tidy`` loads, ``labels`` names,
``selection`` selects, ``aggregate`` computes,
``figures``, ``paper`` and ``tables``
draw and write; ``report`` is ``nslb plot DIR`` and
``notebook`` the same results as pandas frames (pyproject.toml's layers say
what it may import).
"""
