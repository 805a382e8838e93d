"""Exact discrete Gaussian sampler (CKS Algorithm 3)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from privloss.samplers import _batched, _exact
from privloss.samplers._params import nonnegative_rational, positive_rational, size_to_count
from privloss.samplers.discrete_laplace import _scalar_loop
from privloss.samplers.randomness import resolve_source

__all__ = ["discrete_gaussian", "default_proposal_scale"]


def default_proposal_scale(sigma_squared) -> Fraction:
    """The Laplace proposal scale used by :func:`discrete_gaussian` by default.

    CKS Algorithm 3 is correct for *any* proposal scale tau > 0 (the factor
    exp(-sigma^2/(2 tau^2)) it leaves behind does not depend on the output).
    The paper uses the integer tau = floor(sigma) + 1.  We use

    * tau = 1 (the paper's choice) when sigma^2 < 1;
    * tau = sigma^2 / c with the integer c = round(sigma) when sigma^2 >= 1,

    because then sigma^2/tau = c is an integer and gamma =
    (|y| - c)^2 / (2 sigma^2) has the small denominator 2a (sigma^2 = a/b): the
    acceptance test stays in 64-bit integers up to sigma of about 10^8 (the
    paper's choice gives denominators near 2 sigma^4).  It also gives
    sigma/tau close to 1, the most efficient ratio (acceptance about 0.76
    instead of 0.55-0.76).  Everything is computed with integers
    (``math.isqrt``), never a float square root.
    """
    sigma_squared = positive_rational("sigma_squared", sigma_squared)
    if sigma_squared < 1:
        return Fraction(1)
    a, b = sigma_squared.numerator, sigma_squared.denominator
    # round(sigma) = floor(sigma + 1/2) = floor((floor(2 sigma) + 1) / 2),
    # and floor(2 sigma) = isqrt(floor(4 sigma^2)).
    c = (math.isqrt(4 * a // b) + 1) // 2
    return sigma_squared / c


def discrete_gaussian(sigma_squared, size=None, *, source=None, proposal_scale=None,
                      allow_float: bool = False):
    """Exact draws from the discrete Gaussian N_Z(0, sigma_squared).

    Definition
        ``P[X = x] = exp(-x^2 / (2 sigma^2)) / sum_y exp(-y^2 / (2 sigma^2))``
        over the integers.  ``sigma_squared`` is the *parameter* sigma^2; the
        variance is slightly smaller (see :func:`discrete_gaussian_variance`).
        ``sigma_squared = 0`` gives the point mass at 0.  Adding it to an integer
        query of sensitivity Delta gives Delta^2/(2 sigma^2)-zCDP ([CKS] Thm 4).
    Guarantee
        Exact for the rational ``sigma_squared`` (int, ``Fraction``,
        ``Decimal``, string like ``"10/3"``; a float only with
        ``allow_float=True``, meaning its exact binary value).  CKS Algorithm 3:
        a Lap_Z(tau) proposal y accepted with probability
        exp(-(|y| - sigma^2/tau)^2 / (2 sigma^2)), all in integer arithmetic.
        ``proposal_scale`` (rational tau > 0) overrides the default
        :func:`default_proposal_scale`; the output distribution does not depend
        on it, only the speed.  Batched draws use int64 kernels with explicit
        range checks (Python ints otherwise); ``int64`` result, or an object
        array if a value exceeds int64.
    Citation
        [CKS] C. Canonne, G. Kamath, T. Steinke, "The Discrete Gaussian for
        Differential Privacy", NeurIPS 2020, Algorithm 3 / Theorem 6.
    Runtime
        O(1) expected operations per draw (expected outer iterations <= 2.25
        with the default tau).  Value-dependent running time (timing side
        channel, see docs/samplers.md).
    """
    sigma_squared = nonnegative_rational("sigma_squared", sigma_squared, allow_float=allow_float)
    if proposal_scale is None:
        tau = default_proposal_scale(sigma_squared) if sigma_squared > 0 else Fraction(1)
    else:
        tau = positive_rational("proposal_scale", proposal_scale, allow_float=allow_float)
    src = resolve_source(source)
    if sigma_squared == 0:
        if size is None:
            return 0
        count, shape = size_to_count(size)
        return np.zeros(shape, dtype=np.int64)
    a, b = sigma_squared.numerator, sigma_squared.denominator
    p, q = tau.numerator, tau.denominator
    shift = sigma_squared / tau
    e, f = shift.numerator, shift.denominator
    if size is None:
        return _exact.discrete_gaussian(src, a, b, p, q, e, f)
    count, shape = size_to_count(size)
    if _batched.gaussian_fits(a, b, p, q, e, f):
        values = _batched.chunked(
            lambda k: _batched.discrete_gaussian(src, a, b, p, q, e, f, k), count)
    else:
        values = _scalar_loop(lambda: _exact.discrete_gaussian(src, a, b, p, q, e, f), count)
    return values.reshape(shape)
