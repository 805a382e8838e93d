"""Exact parameter handling for the samplers.

Every sampler parameter becomes a :class:`fractions.Fraction` once, at the
entry point, and nothing downstream ever sees a float.  Accepted inputs:

* ``int`` (also NumPy integers), :class:`fractions.Fraction`,
  :class:`decimal.Decimal` (finite; converted exactly);
* strings such as ``"10/3"``, ``"7"``, ``"0.1"`` or ``"1e-3"`` (parsed by
  ``Fraction(str)``, so ``"0.1"`` means exactly 1/10);
* ``float`` **only** with ``allow_float=True``: it is then converted with
  ``Fraction(x)``, i.e. to the exact binary value of the double (``0.1`` becomes
  3602879701896397/36028797018963968), and the privacy guarantee is for that
  rational.  Without the flag a float is rejected, because silently turning
  ``0.1`` into a slightly different rational is exactly the kind of hidden
  floating-point behaviour these samplers exist to avoid.

``bool`` is rejected everywhere (it is an ``int`` subclass but never a
meaningful scale).
"""

from __future__ import annotations

import decimal
import math
import numbers
from fractions import Fraction

import numpy as np


def to_rational(name: str, value, *, allow_float: bool = False) -> Fraction:
    """Convert ``value`` to an exact ``Fraction`` (see the module docstring)."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a rational number, got the bool {value!r}")
    if isinstance(value, Fraction):
        return value
    if isinstance(value, numbers.Integral):
        return Fraction(int(value))
    if isinstance(value, decimal.Decimal):
        if not value.is_finite():
            raise ValueError(f"{name} must be finite, got {value!r}")
        return Fraction(value)
    if isinstance(value, str):
        return _parse_string(name, value)
    if isinstance(value, numbers.Real):  # float, np.floating, other reals
        as_float = float(value)
        if not math.isfinite(as_float):
            raise ValueError(f"{name} must be finite, got {value!r}")
        if not allow_float:
            raise TypeError(
                f"{name} got the float {value!r}; floats are not accepted by the exact "
                f"samplers. Pass a Fraction or a string such as '10/3' or '0.1' "
                f"(exact decimal), or set allow_float=True to use the exact binary "
                f"value Fraction({value!r}) = {Fraction(as_float)}")
        return Fraction(as_float)
    raise TypeError(f"{name} must be an int, Fraction, Decimal or a string like '10/3', "
                    f"got {type(value).__name__} {value!r}")


def _parse_string(name: str, text: str) -> Fraction:
    try:
        return Fraction(text.strip())
    except (ValueError, ZeroDivisionError) as error:
        raise ValueError(f"{name} must be a rational number such as '10/3' or '0.5', "
                         f"got {text!r} ({error})") from None


def positive_rational(name: str, value, *, allow_float: bool = False) -> Fraction:
    """``to_rational`` plus the check ``value > 0``."""
    x = to_rational(name, value, allow_float=allow_float)
    if x <= 0:
        raise ValueError(f"{name} must be a positive rational, got {value!r}")
    return x


def nonnegative_rational(name: str, value, *, allow_float: bool = False) -> Fraction:
    """``to_rational`` plus the check ``value >= 0``."""
    x = to_rational(name, value, allow_float=allow_float)
    if x < 0:
        raise ValueError(f"{name} must be a non-negative rational, got {value!r}")
    return x


def probability(name: str, value, *, allow_float: bool = False) -> Fraction:
    """``to_rational`` plus the check ``0 <= value <= 1``."""
    x = to_rational(name, value, allow_float=allow_float)
    if not 0 <= x <= 1:
        raise ValueError(f"{name} must be a probability in [0, 1], got {value!r}")
    return x


def integer(name: str, value) -> int:
    """Return ``value`` as a Python int (ints, NumPy ints, integral Fractions/strings)."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be an integer, got the bool {value!r}")
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, (Fraction, str)):
        x = to_rational(name, value)
        if x.denominator == 1:
            return x.numerator
    raise TypeError(f"{name} must be an integer, got {value!r}")


def size_to_count(size) -> tuple[int, tuple[int, ...]]:
    """Normalise a NumPy-style ``size`` (int or tuple of ints) to (count, shape)."""
    shape = (size,) if isinstance(size, numbers.Integral) else tuple(size)
    for dim in shape:
        if isinstance(dim, (bool, np.bool_)) or not isinstance(dim, numbers.Integral):
            raise TypeError(f"size must be an int or a tuple of ints, got {size!r}")
        if dim < 0:
            raise ValueError(f"size must be non-negative, got {size!r}")
    shape = tuple(int(dim) for dim in shape)
    return math.prod(shape), shape
