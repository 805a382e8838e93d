"""Exact Bernoulli and uniform-integer samplers.

* :func:`bernoulli` - Bernoulli(p) for rational p;
* :func:`bernoulli_exp` - Bernoulli(exp(-gamma)) for rational gamma >= 0
  (CKS Algorithm 1);
* :func:`uniform_integers` - uniform integers on ``[low, high)``.

``size=None`` returns one Python value; ``size=n`` (or a shape tuple) returns a
NumPy array drawn by the vectorised kernels of :mod:`._batched` when the
parameters fit 64-bit arithmetic, otherwise by a loop over the pure-Python
samplers.  Both paths give the same distribution exactly.
"""

from __future__ import annotations

import numpy as np

from privloss.samplers import _batched, _exact
from privloss.samplers._params import (integer, nonnegative_rational, probability,
                                       size_to_count)
from privloss.samplers.randomness import resolve_source

__all__ = ["bernoulli", "bernoulli_exp", "uniform_integers"]


def bernoulli(p, size=None, *, source=None, allow_float: bool = False):
    """Exact Bernoulli(p) draws for a rational probability ``p``.

    Definition
        True with probability exactly ``p``, False otherwise.
    Guarantee
        Exact: a uniform integer ``D`` on ``{0..d-1}`` is compared with ``n``
        for ``p = n/d`` (scalar), or a uniform real's bits are compared with
        ``n/d`` in exact 64-bit integer arithmetic (batched).  No float is used.
        ``p`` may be an int, ``Fraction``, ``Decimal`` or a string like
        ``"1/3"``; a float only with ``allow_float=True`` (exact binary value).
    Citation
        [CKS] C. Canonne, G. Kamath, T. Steinke, "The Discrete Gaussian for
        Differential Privacy", NeurIPS 2020, Section 5.
    Runtime
        O(1) expected random words per draw (about one 32-bit word batched).
    """
    p = probability("p", p, allow_float=allow_float)
    src = resolve_source(source)
    n, d = p.numerator, p.denominator
    if size is None:
        return _exact.bernoulli_ratio(src, n, d)
    count, shape = size_to_count(size)
    if d < _batched.SAFE:
        values = _batched.chunked_bool(
            lambda k: _batched.bernoulli_ratio(src, np.full(k, n, dtype=np.int64), d), count)
    else:
        values = np.fromiter((_exact.bernoulli_ratio(src, n, d) for _ in range(count)),
                             dtype=np.bool_, count=count)
    return values.reshape(shape)


def bernoulli_exp(gamma, size=None, *, source=None, allow_float: bool = False):
    """Exact Bernoulli(exp(-gamma)) draws for a rational ``gamma >= 0``.

    Definition
        True with probability exactly ``exp(-gamma)``.
    Guarantee
        Exact (CKS Algorithm 1): von Neumann's chain of Bernoulli(gamma/k)
        draws for the fractional part of gamma, and a product of
        Bernoulli(exp(-1)) factors with early exit for the whole part.  Integer
        arithmetic only; ``gamma = 0`` always returns True.
    Citation
        [CKS] Algorithm 1 (von Neumann 1951; Forsythe 1972).
    Runtime
        O(1) expected Bernoulli draws for any gamma (at most about e + 1.6).
    """
    gamma = nonnegative_rational("gamma", gamma, allow_float=allow_float)
    src = resolve_source(source)
    n, d = gamma.numerator, gamma.denominator
    if size is None:
        return _exact.bernoulli_exp(src, n, d)
    count, shape = size_to_count(size)
    if d <= _batched.GAUSSIAN_MAX_DENOMINATOR and n < _batched.SAFE:
        values = _batched.chunked_bool(
            lambda k: _batched.bernoulli_exp(src, np.full(k, n, dtype=np.int64), d), count)
    else:
        values = np.fromiter((_exact.bernoulli_exp(src, n, d) for _ in range(count)),
                             dtype=np.bool_, count=count)
    return values.reshape(shape)


def uniform_integers(low, high, size=None, *, source=None):
    """Exact uniform integers on ``{low, ..., high - 1}``.

    Definition
        Each value in ``[low, high)`` with probability ``1/(high - low)``.
    Guarantee
        Exact rejection sampling on random bits (never ``word % m``).  Arrays
        are ``int64`` when every value fits, else object arrays of Python ints.
    Citation
        [CKS] Section 5 (uniform integers as the only source of randomness).
    Runtime
        Fewer than 2 random words per value in expectation.
    """
    low = integer("low", low)
    high = integer("high", high)
    if high <= low:
        raise ValueError(f"high must be > low, got low={low}, high={high}")
    src = resolve_source(source)
    width = high - low
    if size is None:
        return low + src.uniform_below(width)
    count, shape = size_to_count(size)
    offsets = src.uniform_below_array(width, count)
    if offsets.dtype != object and _batched.INT64_MIN <= low and high - 1 <= _batched.INT64_MAX:
        # low + offset lies in [low, high - 1] within int64, so the sum cannot overflow
        return (offsets + np.int64(low)).reshape(shape)
    values = np.empty(count, dtype=object)
    for i, offset in enumerate(offsets.tolist()):
        values[i] = low + offset
    return values.reshape(shape)
