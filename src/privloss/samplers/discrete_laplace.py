"""Exact discrete Laplace sampler (CKS Algorithm 2)."""

from __future__ import annotations

import numpy as np

from privloss.samplers import _batched, _exact
from privloss.samplers._params import positive_rational, size_to_count
from privloss.samplers.randomness import resolve_source

__all__ = ["discrete_laplace"]


def discrete_laplace(scale, size=None, *, source=None, allow_float: bool = False):
    """Exact draws from the discrete Laplace distribution Lap_Z(scale).

    Definition
        ``P[Z = z] = tanh(1/(2 scale)) * exp(-|z| / scale)`` for every integer
        ``z``; with ``scale = t/s`` the exponent is ``-|z| s / t``.  Adding
        Lap_Z(Delta/epsilon) to an integer query of sensitivity Delta gives
        epsilon-DP.
    Guarantee
        Exact for the rational ``scale`` (int, ``Fraction``, ``Decimal`` or a
        string like ``"10/3"``; a float only with ``allow_float=True``, meaning
        its exact binary value).  CKS Algorithm 2 with integer arithmetic only:
        ``U`` uniform on ``{0..t-1}`` kept with probability ``exp(-U/t)``, plus
        ``t`` times a geometric(exp(-1)) count, divided by ``s``, with a random
        sign and "-0" rejected.  Batched draws use int64 kernels with explicit
        range checks (Python ints for anything that would not fit); the result
        is ``int64``, or an object array if a value exceeds int64.
    Citation
        [CKS] C. Canonne, G. Kamath, T. Steinke, "The Discrete Gaussian for
        Differential Privacy", NeurIPS 2020, Algorithm 2 / Proposition 32.
    Runtime
        O(1) expected operations per draw (about 3.2 outer iterations at
        worst); integers of O(log s + log t + log |Z|) bits.  The running time
        depends on the value drawn (timing side channel, see docs/samplers.md).
    """
    scale = positive_rational("scale", scale, allow_float=allow_float)
    src = resolve_source(source)
    t, s = scale.numerator, scale.denominator
    if size is None:
        return _exact.discrete_laplace(src, t, s)
    count, shape = size_to_count(size)
    if _batched.laplace_fits(t, s):
        values = _batched.chunked(lambda k: _batched.discrete_laplace(src, t, s, k), count)
    else:
        values = _scalar_loop(lambda: _exact.discrete_laplace(src, t, s), count)
    return values.reshape(shape)


def _scalar_loop(draw, count: int) -> np.ndarray:
    """``count`` scalar draws as an int64 array, or an object array if one overflows."""
    values = [draw() for _ in range(count)]
    if all(_batched.INT64_MIN < v <= _batched.INT64_MAX for v in values):
        return np.array(values, dtype=np.int64).reshape(count)
    out = np.empty(count, dtype=object)
    out[:] = values
    return out
