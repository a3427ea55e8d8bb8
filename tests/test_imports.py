"""Start-up: a synthetic run imports none of the heavy libraries only other commands need."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("sklearn", "scipy", "matplotlib", "seaborn")


def test_a_synthetic_run_imports_no_plotting_or_data_libraries() -> None:
    code = (
        "import sys\n"
        "import nslb_cli.cli, nslb_cli.cli.run, nslb_cli.job, nslb_cli.api\n"
        "from nslb_cli.config import register_options\n"
        "register_options()\n"
        "from nslb_cli.agents import AGENTS\n"
        "from nslb_cli.envs import ENVIRONMENTS\n"
        "ENVIRONMENTS['synthetic']\n"
        "for name in AGENTS: AGENTS[name]\n"
        f"print(' '.join(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert loaded.stdout.split() == []


def test_the_registries_import_nothing_until_asked() -> None:
    """Nor does giving Hydra its config options: built-ins have YAML files (plugins would be
    imported, for their Params)."""
    code = (
        "import sys\n"
        "from nslb_cli.agents import AGENTS\n"
        "from nslb_cli.envs import ENVIRONMENTS\n"
        "from nslb_cli.config import register_options\n"
        "register_options()\n"
        "print(sorted(AGENTS) and sorted(ENVIRONMENTS) and "
        "' '.join(m for m in sys.modules if m.startswith(('nslb_cli.envs.', 'nslb_cli.agents.'))))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert loaded.stdout.split() == ["nslb_cli.agents.base"]
