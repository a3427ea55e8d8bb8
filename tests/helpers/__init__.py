"""Helpers shared by the tests: worlds, agents, results trees, plugins, paths, the ``nslb``
command. Tests import helpers from here only, never from one another."""
