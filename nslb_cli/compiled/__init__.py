"""Compiled code for nslb: the machinery behind every numba kernel, apart from the bandit
vocabulary the kernels compute.

* ``jit`` — the decorators of every compiled function (``jit``,
  ``inline``), and the versioned, self-healing cache of their machine code;
* ``generators`` — the runs' numpy generators as compiled code takes
  them.

May import: ``nslb_cli.common``. Import it only from modules that compile: importing numba
costs 0.3-0.6 s.
"""
