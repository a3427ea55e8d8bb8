"""Start-up: a synthetic run imports none of the heavy libraries only other commands need."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("sklearn", "scipy", "matplotlib", "seaborn")


def _imported(code: str) -> list[str]:
    """The modules of HEAVY (and their submodules) loaded after running ``code``."""
    listing = f"' '.join(m for m in sys.modules if m.split('.')[0] in {HEAVY!r})"
    probe = f"import sys\n{code}\nprint({listing})"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return done.stdout.split()


def test_plotting_imports_seaborn_so_the_checks_below_can_fail() -> None:
    """`nslb plot` draws with seaborn; `nslb run` must never load it (nor matplotlib)."""
    assert "seaborn" in _imported("import nslb_cli.cli.plot")


def test_the_results_api_loads_pandas_only_when_used() -> None:
    """``nslb_cli.load_results`` / ``summarise`` import pandas on first use; importing nslb_cli
    or the plugin contract (nslb_cli.api, which has neither) loads no pandas or plotting."""
    probe = (
        "import sys, nslb_cli, nslb_cli.api\n"
        "before = [m for m in ('pandas', 'matplotlib', 'seaborn') if m in sys.modules]\n"
        "from nslb_cli.plot import notebook\n"
        "assert nslb_cli.load_results is notebook.load_results\n"
        "assert nslb_cli.summarise is notebook.summarise\n"
        "assert not hasattr(nslb_cli.api, 'load_results')\n"
        "after = [m for m in ('pandas', 'matplotlib', 'seaborn') if m in sys.modules]\n"
        "print(before, after)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["[]", "['pandas']"], "pandas on first use, never matplotlib"


def test_the_command_line_imports_no_plotting_or_data_libraries() -> None:
    assert (
        _imported("import nslb_cli.cli, nslb_cli.cli.run, nslb_cli.runner.job, nslb_cli.api") == []
    )


def test_a_synthetic_run_imports_no_plotting_or_data_libraries() -> None:
    code = (
        "import nslb_cli.cli, nslb_cli.cli.run, nslb_cli.runner.job, nslb_cli.api\n"
        "from nslb_cli.runner.compose import register_options\n"
        "register_options()\n"
        "from nslb_cli.agents import AGENTS\n"
        "from nslb_cli.envs import ENVIRONMENTS\n"
        "ENVIRONMENTS['synthetic']\n"
        "for name in AGENTS: AGENTS[name]\n"
    )
    # numba (umTS's kernels) imports the scipy package itself to check its version (~10 ms,
    # scipy.version and scipy._lib); none of scipy's subpackages, scikit-learn or the
    # plotting libraries load.
    light = (
        "scipy",
        "scipy.version",
        "scipy.__config__",
        "scipy._distributor_init",
        "scipy._cyutility",
    )
    loaded = [m for m in _imported(code) if m not in light and not m.startswith("scipy._lib")]
    assert loaded == []


def test_the_registries_import_nothing_until_asked() -> None:
    """Nor does giving Hydra its config options: built-ins have YAML files (plugins would be
    imported, for their Params)."""
    code = (
        "import sys\n"
        "from nslb_cli.agents import AGENTS\n"
        "from nslb_cli.envs import ENVIRONMENTS\n"
        "from nslb_cli.runner.compose import register_options\n"
        "register_options()\n"
        "print(sorted(AGENTS) and sorted(ENVIRONMENTS) and "
        "' '.join(m for m in sys.modules if m.startswith(('nslb_cli.envs.', 'nslb_cli.agents.'))))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert loaded.stdout.split() == ["nslb_cli.agents.base"]
