"""Exact (outward-rounded) sums of binary64 numbers, for budget comparisons.

Imports nothing but the standard library, so the ledger and the CLI can use it
without NumPy; the bottom layer (privloss.bounds, privloss.accounting) shares it.
"""

from __future__ import annotations

import math
from fractions import Fraction

__all__ = ["sum_upper", "multiple_upper", "quotient_upper", "floor_difference"]


def quotient_upper(numerator: float, denominator: float) -> float:
    """The smallest binary64 number >= ``numerator / denominator`` computed exactly
    (positive finite binary64 arguments): e.g. a Laplace mechanism's epsilon
    sensitivity / scale, never rounded below the true ratio."""
    quotient = numerator / denominator
    if not math.isfinite(quotient):
        return math.inf
    if Fraction(quotient) < Fraction(numerator) / Fraction(denominator):
        return math.nextafter(quotient, math.inf)
    return quotient


def multiple_upper(value: float, count: int) -> float:
    """The smallest binary64 number >= ``count * value`` computed exactly (``value`` a
    non-negative binary64 number, ``count`` a non-negative int); O(1)."""
    product = value * count
    if not math.isfinite(product):
        return math.inf
    exact = Fraction(value) * count
    return product if Fraction(product) >= exact else math.nextafter(product, math.inf)


def sum_upper(values) -> float:
    """The smallest binary64 number >= the exact sum of the binary64 ``values``.

    ``math.fsum`` is correctly rounded (to nearest), so it may lie half an ulp
    below the exact sum; the sign of the exact residual ``sum - fsum`` is that of
    a second ``fsum`` with ``-fsum`` appended (a correctly rounded nonzero sum of
    binary64 numbers is nonzero and of the same sign). inf if a value is inf or
    NaN or the sum overflows. Runtime: two C-level passes; O(1) for a long
    constant array (``n x`` checked against ``Fraction(x) * n``).
    """
    items = values.tolist() if hasattr(values, "tolist") else list(values)
    if isinstance(items, float):
        items = [items]
    if not items:
        return 0.0
    first = items[0]
    if len(items) > 64 and math.isfinite(first) and items.count(first) == len(items):
        return multiple_upper(first, len(items))
    try:
        total = math.fsum(items)
    except OverflowError:
        return math.inf
    if not math.isfinite(total):
        return math.inf
    residual = math.fsum(items + [-total])
    return math.nextafter(total, math.inf) if residual > 0 else total


def floor_difference(minuend: float, subtrahends) -> float:
    """The largest binary64 number c >= 0 with c + sum(subtrahends) <= minuend exactly
    (0 if there is none): a cap left over after reserving shares of a budget."""
    exact = Fraction(minuend) - sum((Fraction(value) for value in subtrahends), Fraction(0))
    if exact <= 0:
        return 0.0
    value = float(exact)
    if Fraction(value) > exact:
        value = math.nextafter(value, 0.0)
    return value
