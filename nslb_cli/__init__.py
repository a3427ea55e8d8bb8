"""nslb: experiments with non-stationary latent bandits (Hong et al., AISTATS 2021).

Results on disk as pandas frames, for notebooks (see ``nslb_cli.plot.notebook``):

    import nslb_cli
    frame = nslb_cli.load_results("outputs/paper/fixed", rounds=(None, 1000))
    table = nslb_cli.summarise(frame)
    colours = nslb_cli.palette(frame["agent"].unique())   # nslb's colour of each agent

``load_results``, ``summarise`` and ``palette`` are loaded on first use, with pandas:
``import nslb_cli`` and ``nslb run`` load neither pandas nor any plotting library.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # loaded on first use, by __getattr__ below
    from nslb_cli.plot.notebook import load_results, palette, summarise

__version__ = "0.1.0"

RESULTS_API = ("load_results", "palette", "summarise")  # nslb_cli.plot.notebook, when asked
__all__ = ["__version__", "load_results", "palette", "summarise"]


def __getattr__(name: str) -> Any:
    if name in RESULTS_API:
        from nslb_cli.plot import notebook

        return getattr(notebook, name)
    raise AttributeError(f"module 'nslb_cli' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *RESULTS_API})
