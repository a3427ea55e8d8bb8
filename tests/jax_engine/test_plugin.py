"""A plugin's JAX agent (entry-point group ``nslb.jax_agents``): the example plugin's
epsilon-greedy runs on the JAX engine under its own name, and ``nslb check`` passes it, its
JAX class in agreement with its numpy class."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("jax")

from tests.helpers.plugins import fake_example_install, nslb_with  # noqa: E402


@pytest.mark.slow  # in CI: a plugin's JAX agent in a sweep (tests/faults/test_plugin_agents.py)
def test_the_example_plugin_runs_on_the_jax_engine_and_agrees_with_itself(tmp_path: Path) -> None:
    path = fake_example_install(tmp_path / "site")
    run = nslb_with(path, "run", "agent=epsilon_greedy", "run.engine=jax", "env.horizon=50",
                    "run.n_seeds=3", f"hydra.run.dir={tmp_path / 'out'}", cwd=tmp_path)  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert '"explorations"' in (tmp_path / "out/seed=2.json").read_text()
    checked = nslb_with(path, "check", "agent=epsilon_greedy", "agent.epsilon=0.2", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    lines = checked.stdout.splitlines()
    assert lines[0].startswith("nslb check: agent 'epsilon_greedy' (nslb-epsilon-greedy 0.1.0)")
    results = [line.split()[0] for line in lines if line.split()[0] in ("pass", "FAIL", "skip")]
    assert results == ["pass"] * 10, "9 and the engines' (its JAX agent)"
    assert any(line.startswith("pass  engines") for line in lines)
    assert lines[-1] == "all 10 checks passed"


def test_a_plugin_without_a_jax_agent_is_refused_by_the_jax_engine_in_one_line(
    tmp_path: Path,
) -> None:
    path = fake_example_install(tmp_path / "site")
    (next((tmp_path / "site").glob("*.dist-info")) / "entry_points.txt").write_text(
        "[nslb.agents]\nepsilon_greedy = nslb_epsilon_greedy.agent:EpsilonGreedy\n"
    )
    run = nslb_with(path, "run", "agent=epsilon_greedy", "run.engine=jax", cwd=tmp_path)
    assert run.returncode != 0
    assert "epsilon_greedy runs on the numpy engine only" in run.stderr
