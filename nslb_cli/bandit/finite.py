"""A run's numbers stay finite, or the run says in one line which parameter to lower.

No parameter is bounded for the sake of the arithmetic (``nslb_cli.common.validators``):
a value large enough to overflow float64 is refused where it overflows, on either engine,
before anything of its batch is written.

* ``arithmetic`` — around a batch's simulation: an overflow in numpy's or Python's
  arithmetic stops it at once, and so does a belief that is not a number
  (``NotFinite``);
* ``check_finite`` — on the batch's trace: a reward, regret or sum of them that is not
  finite (compiled code and JAX overflow without a word).

Both raise ``ConfigError`` keyed by the first parameter the
environment's ``Params`` names in ``scales`` (the section itself when it names none). An
agent's summary is not checked: its statistics may be NaN for "none" (SL-EC's
``transition_error`` before it estimates).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from nslb_cli.bandit.trace import WORLDS, NotFinite, Trace
from nslb_cli.common.errors import ConfigError, describe_error


def lower(section: str, params: Any, said: str) -> ConfigError:
    """``said`` (what was not finite), and the parameters of ``section`` to lower: those its
    ``Params`` names in ``scales``, else the section."""
    scales = tuple(getattr(params, "scales", ()))
    if not scales:
        return ConfigError(section, f"{said}: lower the values of {section} '{params.name}'")
    named = " or ".join(f"{section}.{key}" for key in scales)
    return ConfigError(f"{section}.{scales[0]}", f"{said}: lower {named}")


@contextmanager
def arithmetic(env: Any, agent: Any) -> Iterator[None]:
    """Run the block with numpy's overflows raised; an overflow (numpy's or a Python float's)
    becomes the one line of ``lower`` for ``env``, whose scale the numbers grow with,
    that names ``agent``'s values too (its own parameters may be what overflowed)."""
    try:
        with np.errstate(over="raise"):
            yield
    except (OverflowError, FloatingPointError, NotFinite) as err:
        overflowed = f"the run's arithmetic overflowed ({describe_error(err)})"
        said = str(err) if isinstance(err, NotFinite) else overflowed
        blamed = lower("env", env, said)
        also = f"{blamed.message}, or the values of agent '{agent.name}'"
        raise ConfigError(blamed.key, also) from None


def _first(values: np.ndarray) -> tuple[int, int] | None:
    """``(run, index)`` of the first entry of the ``(R, n)`` ``values`` that is not finite."""
    broken = ~np.isfinite(values)
    if not broken.any():
        return None
    run, at = np.unravel_index(int(np.argmax(broken)), broken.shape)
    return int(run), int(at)


def check_finite(trace: Trace, env: Any) -> None:
    """Refuse (``lower``) a batch whose world's numbers are not all finite: its rewards,
    their regret and the sums of both, which ``env``'s parameters scale; the line names the
    first such number's round and seed."""
    with np.errstate(over="ignore", invalid="ignore"):  # what overflows is said below
        regret = trace.regret
        sums = trace.cumulative or {
            "cum_regret": np.cumsum(regret, axis=1),
            "cum_reward": np.cumsum(trace.reward, axis=1),
        }
    columns = {name: getattr(trace, name) for name in WORLDS}
    for name, values in {**columns, "regret": regret, **sums}.items():
        found = _first(values)
        if found is not None:
            run, at = found
            t = int(trace.rounds[at]) if trace.rounds is not None else at + 1
            said = f"its {name} is {values[run, at]} in round {t} of seed {trace.seeds[run]}"
            raise lower("env", env, said)
