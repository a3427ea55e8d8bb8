"""The compiled CSV text: the same bytes as Arrow's CSV writer, floats shortest and closest."""

from __future__ import annotations

import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import numpy as np
import pytest

from nslb_cli.core.trace import NO_BELIEF
from nslb_cli.store import results
from nslb_cli.store.results import (
    COLUMNS,
    FLOATS,
    HEADER,
    INTEGERS,
    arrow_text,
    compiled_prints,
    compiled_text,
    seed_columns,
    seed_csv_bytes,
)
from tests.helpers.agents import run_agent
from tests.helpers.results_tree import SMALL

ROOT = Path(__file__).resolve().parents[2]  # the probes import tests.helpers


def hard_doubles(rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
    """Doubles where a float printer goes wrong, ``n`` of each kind: any bit pattern (NaN,
    infinities, subnormals, both zeros), powers of two and their neighbours (the uneven
    gaps), powers of ten, whole numbers (and halves, quarters near 2**53, and round numbers
    above it, where the digits dropped are exactly zero or five), short decimals, values
    near 1, running sums."""
    two = 2.0 ** rng.integers(-1074, 1024, n)
    return {
        "bits": rng.integers(0, 2**64, n, dtype=np.uint64).view(np.float64),
        "subnormal": rng.integers(0, 2**52, n, dtype=np.uint64).view(np.float64),
        "power of two": two,
        "above": np.nextafter(two, np.inf),
        "below": np.nextafter(two, -np.inf),
        "power of ten": 10.0 ** rng.integers(-323, 309, n),
        "whole": rng.integers(-(10**17), 10**17, n).astype(np.float64),
        "near 2**53": rng.integers(2**50, 2**54, n) * 2.0 ** rng.integers(-3, 3, n),
        "round": rng.integers(1, 2000, n) * 10.0 ** rng.integers(14, 24, n),
        "decimal": rng.integers(-(10**7), 10**7, n) / 10.0 ** rng.integers(0, 12, n),
        "unit": rng.random(n),
        "sum": np.cumsum(rng.normal(size=n)),
        "scaled": rng.normal(size=n) * 10.0 ** rng.integers(-12, 14, n),
    }


def columns_of(values: np.ndarray, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """A CSV's columns with ``values`` (shuffled) in every float column, and integers from
    the whole int64 range (``belief`` sometimes missing, ``p_true_state`` where NaN)."""
    n = len(values)
    columns = {name: rng.permutation(values) for name in FLOATS}
    for name in INTEGERS:
        columns[name] = rng.integers(np.iinfo(np.int64).min, np.iinfo(np.int64).max, n)
    columns["t"][: min(n, 3)] = [np.iinfo(np.int64).min, 0, np.iinfo(np.int64).max][:n]
    columns["belief"][rng.random(n) < 0.3] = NO_BELIEF
    return {name: columns[name] for name in COLUMNS}


def fields(text: bytes, column: str) -> list[str]:
    return [line.split(",")[COLUMNS.index(column)] for line in text.decode().splitlines()[1:]]


@pytest.mark.parametrize("kind", list(hard_doubles(np.random.default_rng(0), 1)))
def test_the_compiled_text_is_arrows_on_hard_doubles(kind: str) -> None:
    rng = np.random.default_rng(sum(kind.encode()))
    values = hard_doubles(rng, 20_000)[kind]
    columns = columns_of(values, rng)
    text = compiled_text(columns)
    assert text.startswith(HEADER)
    assert text == arrow_text(columns)


@pytest.mark.parametrize("agent", ["mts", "random"])
def test_the_compiled_text_is_arrows_on_runs(agent: str) -> None:
    trace = run_agent(agent, [3, 4], SMALL)
    for run in range(2):
        columns = seed_columns(trace, run)
        assert compiled_text(columns) == arrow_text(columns)


def test_each_float_is_the_shortest_closest_decimal() -> None:
    """Python's repr (David Gay's shortest round trip, an implementation of its own) prints
    the same decimal number: same digits, same value, for every finite double."""
    rng = np.random.default_rng(7)
    values = np.concatenate(list(hard_doubles(rng, 2_000).values()))
    values = values[np.isfinite(values)]
    columns = columns_of(values, rng)
    text = compiled_text(columns)
    for name in ("reward", "cum_regret"):
        for field, value in zip(fields(text, name), columns[name].tolist(), strict=True):
            assert float(field) == value or (value == 0 and float(field) == 0)
            assert Decimal(field) == Decimal(repr(value)), (field, repr(value))


@pytest.mark.parametrize(
    ("value", "field"),
    [
        (0.1, "0.1"),
        (0.000001, "0.000001"),  # decimal exponent -6: still plain
        (1e-7, "1e-7"),  # -7: exponent form, without padding
        (1.5e-7, "1.5e-7"),
        (123456789.5, "123456789.5"),
        (1e9, "1000000000"),  # exponent 9: plain, no trailing point
        (1e10, "1e+10"),  # 10: exponent form with its sign
        (12345678901.0, "1.2345678901e+10"),
        (-0.0, "-0"),
        (2.0**-1074, "5e-324"),
        (np.finfo(np.float64).max, "1.7976931348623157e+308"),
        (np.inf, "inf"),
        (-np.inf, "-inf"),
        (np.nan, "nan"),
    ],
)
def test_the_layout_of_a_float(value: float, field: str) -> None:
    columns = columns_of(np.array([value]), np.random.default_rng(0))
    assert fields(compiled_text(columns), "reward") == [field]


def test_missing_values_are_empty_fields() -> None:
    """``belief`` NO_BELIEF and ``p_true_state`` NaN are empty; NaN elsewhere is ``nan``."""
    columns = columns_of(np.array([np.nan, np.nan]), np.random.default_rng(1))
    columns["belief"] = np.array([NO_BELIEF, 2])
    columns["p_true_state"] = np.array([np.nan, 0.5])
    text = compiled_text(columns)
    assert fields(text, "belief") == ["", "2"]
    assert fields(text, "p_true_state") == ["", "0.5"]
    assert fields(text, "reward") == ["nan", "nan"]
    assert text == arrow_text(columns)


@pytest.mark.parametrize(
    ("column", "dtype", "compiled"),
    [
        ("action", np.int32, True),
        ("state", np.uint8, True),
        ("state", np.dtype(">i8"), True),  # foreign byte order
        ("reward", np.dtype(">f8"), True),
        ("optimal_reward", np.float32, False),  # Arrow prints float32's own shortest form
        ("state", np.uint64, False),  # may not fit int64
        ("state", np.bool_, False),  # Arrow prints true/false
        ("reward", np.int64, False),  # an integer in a float column: Arrow prints it whole
    ],
)
def test_the_compiled_code_prints_only_what_it_prints_as_arrow(column, dtype, compiled) -> None:
    """Columns of other types than the built-in worlds' (a plugin's world, say) are written
    as before: by Arrow, unless the compiled text is the same."""
    import numba  # noqa: F401  (as after an agent with kernels)

    trace = run_agent("mts", [3], SMALL)
    setattr(trace, column, getattr(trace, column).astype(dtype))
    columns = seed_columns(trace, 0)
    assert compiled_prints(columns) is compiled
    if compiled:
        assert compiled_text(columns) == arrow_text(columns)


def test_seed_csv_bytes_formats_with_compiled_code_once_numba_is_loaded(monkeypatch) -> None:
    import numba  # noqa: F401

    monkeypatch.setattr(results, "compiled_text", lambda columns: b"compiled")
    trace = run_agent("random", [1], SMALL)
    assert seed_csv_bytes(trace, 0) == b"compiled"
    monkeypatch.delitem(sys.modules, "numba")
    assert seed_csv_bytes(trace, 0).startswith(HEADER)


def test_without_compiling_numba_the_csv_is_arrows() -> None:
    """Under NUMBA_DISABLE_JIT compiled functions run as Python, and the 128-bit product
    does not exist there: Arrow writes."""
    probe = (
        "import numba\n"
        "from nslb_cli.store.results import arrow_text, seed_columns, seed_csv_bytes\n"
        "from tests.helpers.agents import run_agent\n"
        "trace = run_agent('random', [1])\n"
        "print(seed_csv_bytes(trace, 0) == arrow_text(seed_columns(trace, 0)))\n"
    )
    environment = {**os.environ, "NUMBA_DISABLE_JIT": "1"}
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=environment, cwd=ROOT
    )
    assert done.stdout.split() == ["True"], done.stderr[-500:]


def test_a_run_of_a_numpy_agent_writes_without_loading_numba() -> None:
    """Importing numba (0.2 s) costs more than the compiled text saves on one job's CSVs:
    a process without it writes with Arrow."""
    probe = (
        "import sys\n"
        "from nslb_cli.store.results import seed_csv_bytes\n"
        "from tests.helpers.agents import run_agent\n"
        "trace = run_agent('random', [1])\n"
        "seed_csv_bytes(trace, 0)\n"
        "print('numba' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert done.stdout.split() == ["False"]
