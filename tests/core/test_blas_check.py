"""numba's BLAS check is served by ``scipy.linalg.cython_blas`` loaded alone
(core.blas_check): nslb's kernels run without importing ``scipy.linalg``, and numba's own BLAS
calls, ``scipy.linalg`` and scikit-learn work the same afterwards, in one fresh process."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

AFTERWARDS = textwrap.dedent(
    """
    import sys

    import numba
    import numpy as np

    import nslb_cli.core.compiled  # noqa: F401  (loads cython_blas alone)
    from tests.helpers.agents import run_agent

    run_agent("cd_ucb", [0, 1])  # cached kernels: numba checks for BLAS here
    assert "scipy.linalg.cython_blas" in sys.modules
    assert "scipy.linalg" not in sys.modules, "the check imported all of scipy.linalg"

    @numba.njit
    def product(a, b):
        return a @ b  # numba calls BLAS (dgemm) through cython_blas

    a = np.arange(12.0).reshape(3, 4)
    b = np.arange(8.0).reshape(4, 2)
    assert np.array_equal(product(a, b), a @ b)

    import scipy.linalg
    from scipy.linalg import cython_blas
    from sklearn.cluster import KMeans

    assert cython_blas is sys.modules["scipy.linalg.cython_blas"]
    assert scipy.linalg.cython_blas is cython_blas, "the package has its submodule"
    assert np.allclose(scipy.linalg.solve(2.0 * np.eye(3), np.ones(3)), 0.5)
    points = np.concatenate([np.zeros((5, 2)), np.ones((5, 2)) * 9])
    labels = KMeans(2, n_init=1, random_state=0).fit(points).labels_
    assert len(set(labels[:5])) == 1 and len(set(labels[5:])) == 1 and labels[0] != labels[5]
    print("ok")
    """
)


def test_kernels_run_without_scipy_linalg_and_blas_works_after() -> None:
    done = subprocess.run(
        [sys.executable, "-c", AFTERWARDS], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "ok"


THROUGH_A_HOOK = textwrap.dedent(
    """
    import importlib.machinery
    import importlib.util
    import sys

    SHARED, LOOK_FIRST = sys.argv[1] == "shared", sys.argv[2] == "look"


    class SharedLoader:
        \"\"\"One loader for every module of the hook (as many hooks have).\"\"\"

        def create_module(self, spec):
            return None

        def exec_module(self, module):
            scipy_path = sys.modules["scipy"].__path__
            found = importlib.machinery.PathFinder.find_spec(module.__name__, scipy_path)
            found.loader.exec_module(module)


    class Hook:
        \"\"\"An import hook of scipy's own (an editable build's): it finds scipy.linalg,
        by the path finder, and says so.\"\"\"

        asked = []
        loader = SharedLoader()

        def find_spec(self, fullname, path, target=None):
            if fullname != "scipy.linalg":
                return None
            self.asked.append(fullname)
            spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
            if SHARED:
                spec = importlib.util.spec_from_file_location(
                    fullname, spec.origin, loader=self.loader,
                    submodule_search_locations=spec.submodule_search_locations,
                )
            return spec

    sys.meta_path.insert(0, Hook())
    import nslb_cli.core.compiled  # noqa: F401  (loads cython_blas alone, before its finder)
    import scipy

    if LOOK_FIRST:
        assert importlib.util.find_spec("scipy.linalg") is not None
    import scipy.linalg

    assert Hook.asked and set(Hook.asked) == {"scipy.linalg"}, "the hook was asked"
    assert scipy.linalg.cython_blas is sys.modules["scipy.linalg.cython_blas"]
    assert "exec_module" not in vars(scipy.linalg.__loader__), "the loader is left as it was"
    print("ok")
    """
)


@pytest.mark.parametrize("look", ["look", "import"])  # found once before the import, or not
@pytest.mark.parametrize("loader", ["shared", "own"])  # one loader for the hook, or per spec
def test_scipy_linalg_is_found_by_an_import_hook_of_its_own_and_gets_its_submodule(
    loader: str, look: str
) -> None:
    done = subprocess.run(
        [sys.executable, "-c", THROUGH_A_HOOK, loader, look],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "ok"
