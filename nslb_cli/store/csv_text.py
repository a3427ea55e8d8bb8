"""The rows of a seed CSV as text, compiled: integers, and floats in their shortest form.

A float is written as the fewest decimal digits that parse back to the very same double,
and among those the ones closest to it, found by Ryu (U. Adams, "Ryu: fast float-to-string
conversion", PLDI 2018): with ``x = m2 * 2**e2`` and the halfway points to its neighbours
``(4 m2 - 1 - [mantissa bits zero]) * 2**(e2-2)`` and ``(4 m2 + 2) * 2**(e2-2)``, the three
are scaled by one power of ten ``10**-e10`` (a 128-bit product with a precomputed power of
five), then decimal digits are dropped from all three while the lower and upper bounds stay
apart, the last one rounding the value (ties to even, bounds included for an even ``m2``).

The digits are laid out as nslb has always written them (the text of Arrow's CSV writer,
which earlier versions used, and which the tests compare against on millions of values):
``d.ddde±x`` when the decimal exponent ``x`` is below -6 or 10 and above, else plain
decimals without a trailing point (``0.000001``, ``123456789.5``, ``1``); ``-0``, ``inf``,
``-inf``, ``nan``. Twice as fast as Arrow's formatting, and free of Python's lock, so the
writer's threads format at once.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from nslb_cli.core.compiled import jit

INT, FLOAT = 0, 1  # kinds of column in a layout (csv_rows)
FIELD_BYTES = 26  # the longest field and its separator: "-0.0000012345678901234567,"

_U0, _U1, _U2, _U4 = np.uint64(0), np.uint64(1), np.uint64(2), np.uint64(4)
_U5, _U10, _U50, _U100 = np.uint64(5), np.uint64(10), np.uint64(50), np.uint64(100)
_MANTISSA = np.uint64((1 << 52) - 1)
_HIDDEN_BIT = np.uint64(1 << 52)
_SIGN = np.uint64(1 << 63)
_INFINITY = np.uint64(0x7FF << 52)
_BITS = 125  # bits of the scaled powers of five below


def _pow5_bits(e: int) -> int:
    """``ceil(log2(5**e))`` for ``e >= 1`` (1 for ``e = 0``), as Ryu computes it."""
    return ((e * 1217359) >> 19) + 1


def _halves(values: list[int]) -> np.ndarray:
    """128-bit integers as ``(low, high)`` 64-bit pairs."""
    return np.array([(v & (2**64 - 1), v >> 64) for v in values], dtype=np.uint64)


_POW5_BITS = np.array([_pow5_bits(e) for e in range(342)], dtype=np.int64)
_INVERSE_POW5 = _halves([2 ** (_pow5_bits(q) - 1 + _BITS) // 5**q + 1 for q in range(342)])
"""``2**(pow5bits(q) - 1 + 125) / 5**q``, rounded up: ``10**-q`` for ``e2 >= 0``."""
_POW5 = _halves(
    [5**i >> (_pow5_bits(i) - _BITS) if _pow5_bits(i) >= _BITS else 5**i << (_BITS - _pow5_bits(i))
     for i in range(326)]
)  # fmt: skip
"""``5**i`` scaled to 125 bits: ``10**-q`` for ``e2 < 0``."""


def _mul_shift_code(typingctx, m, low, high, shift):  # type: ignore[no-untyped-def]
    """``(m * (high * 2**64 + low)) >> shift`` for ``shift >= 64``, in 128-bit arithmetic
    (numba has no 128-bit integers; LLVM does)."""
    signature = types.uint64(types.uint64, types.uint64, types.uint64, types.int64)

    def codegen(context, builder, sig, args):  # type: ignore[no-untyped-def]
        m, low, high, shift = args
        wide = ir.IntType(128)
        m = builder.zext(m, wide)
        below = builder.lshr(builder.mul(m, builder.zext(low, wide)), ir.Constant(wide, 64))
        total = builder.add(below, builder.mul(m, builder.zext(high, wide)))
        rest = builder.zext(builder.sub(shift, ir.Constant(ir.IntType(64), 64)), wide)
        return builder.trunc(builder.lshr(total, rest), ir.IntType(64))

    return signature, codegen


_mul_shift: Any = intrinsic(_mul_shift_code)


@jit
def _fives(v: np.uint64) -> int:
    """The exponent of the largest power of five dividing ``v > 0``."""
    count = 0
    while v % _U5 == _U0:
        v //= _U5
        count += 1
    return count


@jit
def shortest(bits: np.uint64) -> tuple[np.uint64, int]:
    """``(digits, e10)`` with ``digits * 10**e10`` the shortest decimal of the positive,
    finite, nonzero double whose bits are ``bits`` (Ryu, the module's docstring)."""
    mantissa = bits & _MANTISSA
    biased = np.int64(bits >> np.uint64(52))
    if biased == 0:
        e2, m2 = 1 - 1023 - 52 - 2, mantissa
    else:
        e2, m2 = biased - 1023 - 52 - 2, _HIDDEN_BIT | mantissa
    even = (m2 & _U1) == _U0
    mv = _U4 * m2
    lower_gap = _U1 if (mantissa != _U0 or biased <= 1) else _U0  # 2**e2 a power of two: half
    vm_zeros = vr_zeros = False  # whether the digits dropped from vm, vr were all zeros
    if e2 >= 0:
        q = ((e2 * 78913) >> 18) - (1 if e2 > 3 else 0)  # floor(log10(2**e2)), less one
        e10 = q
        shift = -e2 + q + _BITS + _POW5_BITS[q] - 1
        low, high = _INVERSE_POW5[q, 0], _INVERSE_POW5[q, 1]
        vr = _mul_shift(mv, low, high, shift)
        vp = _mul_shift(mv + _U2, low, high, shift)
        vm = _mul_shift(mv - _U1 - lower_gap, low, high, shift)
        if q <= 21:  # the scaled values may be exact: then their dropped digits are zeros
            if mv % _U5 == _U0:
                vr_zeros = _fives(mv) >= q
            elif even:
                vm_zeros = _fives(mv - _U1 - lower_gap) >= q
            elif _fives(mv + _U2) >= q:
                vp -= _U1  # an odd m2 excludes its upper bound
    else:
        q = ((-e2 * 732923) >> 20) - (1 if -e2 > 1 else 0)  # floor(log10(5**-e2)), less one
        e10 = q + e2
        i = -e2 - q
        shift = q - (_POW5_BITS[i] - _BITS)
        low, high = _POW5[i, 0], _POW5[i, 1]
        vr = _mul_shift(mv, low, high, shift)
        vp = _mul_shift(mv + _U2, low, high, shift)
        vm = _mul_shift(mv - _U1 - lower_gap, low, high, shift)
        if q <= 1:
            vr_zeros = True
            if even:
                vm_zeros = lower_gap == _U1
            else:
                vp -= _U1
        elif q < 63:
            vr_zeros = (mv & ((_U1 << np.uint64(q)) - _U1)) == _U0
    removed = 0
    if vm_zeros or vr_zeros:  # rare: exact values, where ties and bounds decide
        last = _U0
        while vp // _U10 > vm // _U10:
            vm_zeros = vm_zeros and vm % _U10 == _U0
            vr_zeros = vr_zeros and last == _U0
            last = vr % _U10
            vr, vp, vm = vr // _U10, vp // _U10, vm // _U10
            removed += 1
        if vm_zeros:
            while vm % _U10 == _U0:
                vr_zeros = vr_zeros and last == _U0
                last = vr % _U10
                vr, vp, vm = vr // _U10, vp // _U10, vm // _U10
                removed += 1
        if vr_zeros and last == _U5 and vr % _U2 == _U0:
            last = _U4  # exactly halfway: round to even
        up = (vr == vm and (not even or not vm_zeros)) or last >= _U5
        return vr + (_U1 if up else _U0), e10 + removed
    up = False
    if vp // _U100 > vm // _U100:
        up = vr % _U100 >= _U50
        vr, vp, vm = vr // _U100, vp // _U100, vm // _U100
        removed += 2
    while vp // _U10 > vm // _U10:
        up = vr % _U10 >= _U5
        vr, vp, vm = vr // _U10, vp // _U10, vm // _U10
        removed += 1
    return vr + (_U1 if (vr == vm or up) else _U0), e10 + removed


@jit
def _length(v: np.uint64) -> int:
    """The number of decimal digits of ``v``."""
    n, power = 1, _U10
    while n < 20 and v >= power:
        n += 1
        power *= _U10
    return n


@jit
def _put_digits(out: np.ndarray, at: int, v: np.uint64, n: int) -> int:
    """Write the ``n`` last decimal digits of ``v`` at ``out[at:at + n]``; the end."""
    for k in range(n - 1, -1, -1):
        out[at + k] = 48 + np.uint8(v % _U10)
        v //= _U10
    return at + n


@jit
def _put_zeros(out: np.ndarray, at: int, n: int) -> int:
    for k in range(n):
        out[at + k] = 48
    return at + max(n, 0)


@jit
def _put_int(out: np.ndarray, at: int, v: int) -> int:
    """Write the integer ``v``; the end."""
    if v < 0:
        out[at] = 45
        at += 1
        magnitude = np.uint64(-(v + 1)) + _U1  # -v overflows for the smallest int64
    else:
        magnitude = np.uint64(v)
    return _put_digits(out, at, magnitude, _length(magnitude))


@jit
def _put_float(out: np.ndarray, at: int, x: float, bits: np.uint64) -> int:
    """Write the double ``x`` (whose bits are ``bits``) as the module's docstring says; the
    end."""
    if x != x:
        out[at], out[at + 1], out[at + 2] = 110, 97, 110  # nan
        return at + 3
    if bits & _SIGN:
        out[at] = 45
        at += 1
        bits ^= _SIGN
    if bits == _INFINITY:
        out[at], out[at + 1], out[at + 2] = 105, 110, 102  # inf
        return at + 3
    if bits == _U0:
        out[at] = 48
        return at + 1
    digits, e10 = shortest(bits)
    n = _length(digits)
    point = e10 + n  # digits d1 … dn mean 0.d1…dn * 10**point
    exponent = point - 1
    if -6 <= exponent < 10:
        if point <= 0:  # 0.000ddd
            out[at], out[at + 1] = 48, 46
            at = _put_zeros(out, at + 2, -point)
            return _put_digits(out, at, digits, n)
        if point >= n:  # ddd000
            at = _put_digits(out, at, digits, n)
            return _put_zeros(out, at, point - n)
        _put_digits(out, at + point + 1, digits, n - point)  # dd.ddd
        out[at + point] = 46
        whole = digits
        for _ in range(n - point):
            whole //= _U10
        _put_digits(out, at, whole, point)
        return at + n + 1
    if n > 1:  # d.ddde±x
        _put_digits(out, at + 2, digits, n - 1)
        first = digits
        for _ in range(n - 1):
            first //= _U10
        out[at], out[at + 1] = 48 + np.uint8(first), 46
        at += n + 1
    else:
        out[at] = 48 + np.uint8(digits)
        at += 1
    out[at] = 101
    out[at + 1] = 45 if exponent < 0 else 43
    exponent = abs(exponent)
    width = 1 if exponent < 10 else (2 if exponent < 100 else 3)
    return _put_digits(out, at + 2, np.uint64(exponent), width)


@jit
def csv_rows(
    ints: np.ndarray,
    floats: np.ndarray,
    layout: np.ndarray,
    int_null: int,
    out: np.ndarray,
    at: int,
) -> int:
    """Write one CSV line per round into ``out`` from ``at`` on; returns the end.

    ``ints`` ``(I, n)`` int64 (``I >= 1``) and ``floats`` ``(F, n)`` float64 hold the
    columns; row ``c`` of ``layout`` names line field ``c``: ``(INT, i, null)`` is
    ``ints[i]``, left empty where it equals ``int_null`` if ``null``; ``(FLOAT, f, null)`` is
    ``floats[f]``, empty where NaN if ``null`` (else ``nan``). ``out`` needs
    :data:`FIELD_BYTES` per field.
    """
    bits = floats.view(np.uint64)
    fields = layout.shape[0]
    for t in range(ints.shape[1]):
        for c in range(fields):
            column, null = layout[c, 1], layout[c, 2] == 1
            if layout[c, 0] == INT:
                v = ints[column, t]
                if not (null and v == int_null):
                    at = _put_int(out, at, v)
            else:
                x = floats[column, t]
                if not (null and x != x):
                    at = _put_float(out, at, x, bits[column, t])
            out[at] = 44 if c < fields - 1 else 10
            at += 1
    return at
