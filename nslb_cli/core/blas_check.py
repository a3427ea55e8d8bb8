"""numba's BLAS check without all of ``scipy.linalg``.

When a process loads its first compiled kernel, numba checks that BLAS is there by importing
``scipy.linalg.cython_blas``, and Python imports a module's package first: all of
``scipy.linalg``, 0.16 s of every ``nslb run`` of a compiled agent, for kernels of which none
calls BLAS. :func:`load_cython_blas` loads that one extension module from scipy's files by
itself (2 ms: it imports nothing) and registers it under its name, where numba's import,
and any later ``import scipy.linalg.cython_blas`` or ``from scipy.linalg import cython_blas``,
find it. ``scipy.linalg`` itself is imported as usual by whatever needs it, and gets the
module as its attribute ``cython_blas`` (:class:`_GiveParentItsModule`), as if it had
loaded it.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any

PARENT = "scipy.linalg"
NAME = "scipy.linalg.cython_blas"


def load_cython_blas() -> None:
    """Register ``scipy.linalg.cython_blas`` loaded alone; leave it to the import system
    when it is loaded already, or scipy or the file is not found, or loading fails."""
    if NAME in sys.modules:
        return
    scipy = importlib.util.find_spec("scipy")
    if scipy is None or not scipy.submodule_search_locations:
        return
    finder = importlib.machinery.FileFinder(
        f"{scipy.submodule_search_locations[0]}/linalg",
        (importlib.machinery.ExtensionFileLoader, importlib.machinery.EXTENSION_SUFFIXES),
    )
    spec = finder.find_spec(NAME)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules[NAME] = module
    try:
        spec.loader.exec_module(module)
    except Exception:  # noqa: BLE001  (numba's own import then says what is wrong)
        del sys.modules[NAME]
        return
    if PARENT in sys.modules:
        sys.modules[PARENT].cython_blas = module  # type: ignore[attr-defined]
    else:
        sys.meta_path.insert(0, _GiveParentItsModule())


class _GiveParentItsModule(importlib.abc.MetaPathFinder):
    """Finds ``scipy.linalg`` as the finders after it do (a scipy installed through an
    import hook of its own, an editable build say, is found by that hook) and sets
    ``cython_blas`` on it after it runs: Python sets a submodule on its package only when it
    loads the submodule itself, so ``scipy.linalg.cython_blas`` would otherwise be missing.
    Other names it leaves to the finders after it."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname != PARENT:
            return None
        spec = _found_after(self, fullname, path, target)
        if spec is not None and spec.loader is not None:
            _give_parent_its_module(spec.loader)
        return spec


def _give_parent_its_module(loader: Any) -> None:
    """Make ``loader`` set ``cython_blas`` on ``scipy.linalg`` once it has run it; its
    ``exec_module`` is itself again from then on. A loader may serve other modules too (an
    import hook's one loader), and the package may be found more than once before it is
    imported: the wrapper acts on ``scipy.linalg`` only, and is not wrapped again."""
    run = loader.exec_module
    if getattr(run, "gives_cython_blas", False):
        return
    own = getattr(loader, "__dict__", {}).get("exec_module")

    def exec_module(module: ModuleType) -> None:
        if module.__name__ == PARENT:
            if own is None:
                del loader.exec_module
            else:
                loader.exec_module = own
        run(module)
        if module.__name__ == PARENT and NAME in sys.modules:
            module.cython_blas = sys.modules[NAME]  # type: ignore[attr-defined]

    exec_module.gives_cython_blas = True  # type: ignore[attr-defined]
    with contextlib.suppress(AttributeError):  # a loader that takes no attributes: as it is
        loader.exec_module = exec_module


def _found_after(
    finder: object, fullname: str, path: Sequence[str] | None, target: ModuleType | None
) -> ModuleSpec | None:
    """The spec of ``fullname`` from the first of the finders after ``finder`` in
    ``sys.meta_path`` that finds it."""
    finders = list(sys.meta_path)
    after = finders[finders.index(finder) + 1 :] if finder in finders else finders
    for other in after:
        find = getattr(other, "find_spec", None)
        if other is finder or find is None:
            continue
        spec = find(fullname, path, target)
        if spec is not None:
            return spec
    return None
