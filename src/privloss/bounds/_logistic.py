"""``expit`` and ``log_expit`` with the C library's ``exp`` / ``log1p``, one
value at a time: the formulas (and so the values, bit for bit) of
``scipy.special.expit`` / ``log_expit``, whose import (``scipy.special``:
0.4 to 0.8 s of CPU) a top-k release's accounting does not need for the few
mechanisms these bounds take.

Definition
----------
``expit(x) = 1 / (1 + exp(-x))``; ``log_expit(x) = x - log1p(exp(x))`` for
``x < 0``, else ``-log1p(exp(-x))``: SciPy's own (``xsf``), each with one
correctly-rounded-or-faithful libm call and two roundings, the error the
lattice bounds assume ("3u" for ``expit``, a few ulps for ``log_expit``).

Privacy guarantee
-----------------
None by itself (numerics of :mod:`privloss.bounds._heterogeneous_lattice`).

Citation
--------
SciPy ``scipy.special.expit`` / ``log_expit``.

Runtime
-------
O(n) Python-level calls for n values (n is a number of mechanisms).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["expit", "log_expit"]


def _expit(x: float) -> float:
    try:
        return 1.0 / (1.0 + math.exp(-x))
    except OverflowError:       # exp(-x) = inf in C: 1 / inf
        return 0.0


def _log_expit(x: float) -> float:
    if x < 0:
        return x - math.log1p(math.exp(x))
    return -math.log1p(math.exp(-x))


def _apply(function, x):
    if np.ndim(x) == 0:
        return np.float64(function(float(x)))
    values = np.asarray(x, dtype=float)
    return np.fromiter((function(v) for v in values.ravel().tolist()), dtype=float,
                       count=values.size).reshape(values.shape)


def expit(x):
    """The logistic function of a number or an array (float64)."""
    return _apply(_expit, x)


def log_expit(x):
    """log(expit(x)) of a number or an array (float64), without cancellation."""
    return _apply(_log_expit, x)
