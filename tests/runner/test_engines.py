"""``run.engine`` is one object (nslb_cli.runner.engines); nslb's own JAX agents are entry
points of the group plugins declare theirs in, listed without importing JAX."""

from __future__ import annotations

import subprocess
import sys

import pytest

from nslb_cli.agents import AGENTS


def test_the_jax_engine_is_imported_only_by_a_batch_it_simulates() -> None:
    """Validating a job of either engine (the JAX engine's coverage, its list of agents)
    and simulating on the default engine import no JAX: JAX is an optional extra."""
    code = (
        "import sys, numpy as np\n"
        "from nslb_cli.agents import AGENTS\n"
        "from nslb_cli.envs.synthetic import SyntheticParams\n"
        "from nslb_cli.runner.config import RunSettings\n"
        "from nslb_cli.runner.engines import ENGINES\n"
        "env, mts = SyntheticParams(horizon=20), AGENTS['mts'].Params()\n"
        "assert ENGINES['jax'].refusal(env, mts) is None\n"
        "assert ENGINES['jax'].refusal(env, AGENTS['exp3s'].Params())[0] == 'agent'\n"
        "ENGINES['numpy'].simulate(env, mts, np.arange(2), RunSettings(progress=False))\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'jax', 'jaxlib'}))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["[]"]


def test_nslbs_own_jax_agents_are_found_through_their_entry_points() -> None:
    """Each is the JAX twin of the numpy agent of its name: the same ``Params``."""
    pytest.importorskip("jax")
    from nslb_cli.jax_engine.agents import JAX_AGENTS, own

    assert {"mts", "umts", "cd_ucb", "exp4s"} <= set(own())
    for name in own():
        assert JAX_AGENTS[name].Params is AGENTS[name].Params, name
