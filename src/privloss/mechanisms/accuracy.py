"""Accuracy of the noise mechanisms: exact confidence half-widths and results
that carry their error bars.

* :func:`discrete_laplace_half_width`, :func:`discrete_gaussian_half_width` -
  the smallest integer ``w`` with ``P[max_i |X_i| > w] <= beta`` for ``dimension``
  independent noise draws, computed from the exact pmf (mpmath, 50 digits);
* :func:`laplace_linf_bound` - the closed-form union bound of the lecture notes
  (Dwork–Roth Thm 3.8): ``||Y||_inf <= ln(d / beta) * scale`` with probability
  ``>= 1 - beta``;
* :class:`NoisyRelease` - a released value together with its half-width, so a
  result can be reported as ``value +- half_width`` at confidence ``1 - beta``.

These are post-processing of public parameters (scale, beta, dimension): they
never touch private data, so the mpmath floating point used here cannot leak
anything. They are conservative: a computed tail probability is compared with
``beta`` only after a relative safety margin far above mpmath's rounding error,
so a returned ``w`` is never too small (it may, at an exact tie, be one larger
than the true optimum).
"""

from __future__ import annotations

import functools
import math
import numbers
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from privloss.samplers._params import nonnegative_rational, positive_rational
from privloss.samplers.exact_pmf import discrete_gaussian_mass

__all__ = [
    "NoisyRelease",
    "check_beta",
    "check_dimension",
    "discrete_laplace_half_width",
    "discrete_gaussian_half_width",
    "discrete_laplace_tail",
    "discrete_gaussian_tail",
    "laplace_linf_bound",
]

#: mpmath working precision (decimal digits) of the tail computations.
_DPS = 50
#: Relative margin that a computed tail must clear below beta (mpmath's error
#: at 50 digits is ~1e-48 relative; this leaves 8 orders of magnitude of room).
_MARGIN = Fraction(1, 10**40)


def _mpmath():
    try:
        import mpmath
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise ImportError("exact confidence intervals need mpmath (pip install mpmath, "
                          "or install the 'samplers' extra: pip install '.[samplers]' from a checkout)") from error
    return mpmath


def check_beta(beta) -> float:
    """``beta`` must be a real number in (0, 1) (the interval fails with probability <= beta)."""
    if isinstance(beta, (bool, np.bool_)) or not isinstance(beta, numbers.Real):
        raise TypeError(f"beta must be a real number in (0, 1), got {beta!r}")
    value = float(beta)
    if not 0.0 < value < 1.0:  # also rejects NaN
        raise ValueError(f"beta must be in (0, 1), got {beta!r}")
    return value


def check_dimension(dimension) -> int:
    """``dimension`` must be an integer >= 1 (number of independent noise draws)."""
    if isinstance(dimension, (bool, np.bool_)) or not isinstance(dimension, (int, np.integer)):
        raise TypeError(f"dimension must be an integer >= 1, got {dimension!r}")
    if dimension < 1:
        raise ValueError(f"dimension must be an integer >= 1, got {dimension!r}")
    return int(dimension)


def _per_coordinate_beta(mp, beta: float, dimension: int):
    """beta_1 with 1 - (1 - beta_1)^d = beta: independence makes this exact (no union bound)."""
    return -mp.expm1(mp.log1p(-mp.mpf(beta)) / dimension)


def _meets(mp, tail, target) -> bool:
    """tail <= target with the safety margin (never accepts a tail above target)."""
    return tail * (1 + mp.mpf(_MARGIN.numerator) / _MARGIN.denominator) <= target


def _smallest_half_width(mp, tail, target, start: int) -> int:
    """Smallest integer w >= 0 with ``tail(w) <= target`` (tail non-increasing in w)."""
    if _meets(mp, tail(0), target):
        return 0
    high = max(1, start)
    while not _meets(mp, tail(high), target):
        high *= 2
        if high.bit_length() > 8192:    # tail not decreasing at working precision
            raise ArithmeticError("no interval half-width found below 2^8192: the noise "
                                  "scale is beyond the supported range")
    low = 0  # invariant: tail(low) fails, tail(high) meets
    while high - low > 1:
        middle = (low + high) // 2
        if _meets(mp, tail(middle), target):
            high = middle
        else:
            low = middle
    return high


def discrete_laplace_tail(w: int, scale):
    """P[|Z| > w] = 2 r^(w+1) / (1 + r), r = exp(-1/scale), for Z ~ Lap_Z(scale), w >= 0."""
    mp = _mpmath()
    scale = positive_rational("scale", scale, allow_float=True)
    with mp.workdps(_DPS):
        # through log r = -1/scale: for scale ~ 1e300, r itself rounds to 1 at 50 digits
        log_r = -mp.mpf(scale.denominator) / scale.numerator
        return 2 * mp.exp(log_r * (int(w) + 1)) / (1 + mp.exp(log_r))


def discrete_gaussian_tail(w: int, sigma_squared):
    """P[|X| > w] = 2 P[X >= w + 1] for X ~ N_Z(0, sigma^2), w >= 0 (exact pmf sums)."""
    mp = _mpmath()
    with mp.workdps(_DPS):
        return 2 * discrete_gaussian_mass(int(w) + 1, None, sigma_squared, dps=_DPS)


def discrete_laplace_half_width(scale, beta, dimension: int = 1) -> int:
    """Smallest integer w with P[max_i |Z_i| > w] <= beta, Z_i iid Lap_Z(scale).

    Definition
        With r = exp(-1/scale), P[|Z| > w] = 2 r^(w+1) / (1 + r) exactly, and for
        ``dimension`` = d independent coordinates P[max |Z_i| > w] =
        1 - (1 - P[|Z| > w])^d (exact, tighter than the union bound).
    Guarantee
        The returned w satisfies the inequality (checked at 50 digits with a
        1e-40 relative margin); w - 1 does not, up to that margin. It is never
        larger than ``ceil(laplace_linf_bound(scale, beta, d))``.
    Citation
        Closed-form tail of the discrete Laplace (CKS §2); union/lecture-notes
        comparison: Dwork–Roth Thm 3.8.
    Runtime
        O(log w) closed-form evaluations.
    """
    scale = positive_rational("scale", scale, allow_float=True)
    return _laplace_half_width(scale, check_beta(beta), check_dimension(dimension))


#: relative distance from an integer below which the float threshold of
#: :func:`_float_laplace_half_width` defers to mpmath (its error is ~1e-15)
_FLOAT_MARGIN = 1e-9


def _float_laplace_half_width(scale: Fraction, beta: float, dimension: int) -> int | None:
    """The half-width of :func:`discrete_laplace_half_width` from the closed-form
    threshold in floats, or None where floats cannot decide it.

    ``P[|Z| > w] <= b`` (b the per-coordinate beta) is ``w >= x`` with
    ``x = scale * ln(2 / (b (1 + r))) - 1``: the answer is ``max(0, ceil(x))``.
    Each float step (``expm1``, ``log1p``, ``exp``, ``log``, products) is within
    a few ulps, so the computed ``x`` is within about 1e-15 * (scale + |x| + 1)
    of the exact one; when it lies farther than ``1e-9`` times that from
    every integer, its ceiling is the exact answer, which the mpmath search
    (50 digits, 1e-40 margin) also returns; else (a near-tie) None, and the
    caller runs that search.  This keeps mpmath (0.05 to 0.2 s to import) off
    a release's path without changing any half-width."""
    value = float(scale)
    if not (0.0 < value < 1e300):
        return None
    target = -math.expm1(math.log1p(-beta) / dimension)
    if not target > 0.0:
        return None
    ratio = math.exp(-1.0 / value)
    x = value * math.log(2.0 / (target * (1.0 + ratio))) - 1.0
    if not math.isfinite(x) or \
            abs(x - round(x)) <= _FLOAT_MARGIN * (value + abs(x) + 1.0):
        return None
    return max(0, math.ceil(x))


@functools.lru_cache(maxsize=256)
def _laplace_half_width(scale: Fraction, beta: float, dimension: int) -> int:
    fast = _float_laplace_half_width(scale, beta, dimension)
    if fast is not None:
        return fast
    return _mpmath_laplace_half_width(scale, beta, dimension)


def _mpmath_laplace_half_width(scale: Fraction, beta: float, dimension: int) -> int:
    mp = _mpmath()
    with mp.workdps(_DPS):
        target = _per_coordinate_beta(mp, beta, dimension)
        start = math.ceil(float(scale) * math.log(dimension / beta)) + 1
        return _smallest_half_width(mp, lambda w: discrete_laplace_tail(w, scale), target, start)


def discrete_gaussian_half_width(sigma_squared, beta, dimension: int = 1) -> int:
    """Smallest integer w with P[max_i |X_i| > w] <= beta, X_i iid N_Z(0, sigma^2).

    Definition
        P[|X| > w] = 2 sum_{y > w} exp(-y^2/(2 sigma^2)) / Z(sigma^2), summed
        exactly (term by term, or Euler–Maclaurin with a proven remainder bound
        for large sigma; :func:`privloss.samplers.discrete_gaussian_mass`); d
        coordinates combine exactly as 1 - (1 - P[|X| > w])^d.
    Guarantee
        As :func:`discrete_laplace_half_width`. ``sigma_squared = 0`` gives 0.
    Citation
        [CKS] C. Canonne, G. Kamath, T. Steinke, NeurIPS 2020 (the pmf); the
        search starts from the subgaussian bound sigma sqrt(2 ln(2d/beta)).
    Runtime
        O(log w) tail sums of O(sigma) terms each (O(1) for sigma^2 >= 10^4).
    """
    sigma_squared = nonnegative_rational("sigma_squared", sigma_squared, allow_float=True)
    beta = check_beta(beta)
    dimension = check_dimension(dimension)
    if sigma_squared == 0:
        return 0
    return _gaussian_half_width(sigma_squared, beta, dimension)


@functools.lru_cache(maxsize=256)
def _gaussian_half_width(sigma_squared: Fraction, beta: float, dimension: int) -> int:
    mp = _mpmath()
    with mp.workdps(_DPS):
        target = _per_coordinate_beta(mp, beta, dimension)
        start = math.ceil(math.sqrt(float(sigma_squared) * 2 * math.log(2 * dimension / beta)))
        return _smallest_half_width(
            mp, lambda w: discrete_gaussian_tail(w, sigma_squared), target, start)


def laplace_linf_bound(scale, beta, dimension: int = 1) -> float:
    """ln(d / beta) * scale: P[||Y||_inf >= ln(d/beta) scale] <= beta for Y iid Lap(scale).

    Definition / citation
        Dwork–Roth Theorem 3.8 (seed 003): union bound over d coordinates and
        P[|Y| >= t b] = e^-t. Also valid for the discrete Laplace rounded up to
        an integer: P[|Z| > m] = 2 r^(m+1)/(1+r) <= r^m for integer m.
    Guarantee
        Closed form in floats (post-processing of public parameters), rounded
        up by one ulp. Example (notes): 10 000 counts, scale 1, beta = 0.05:
        ln(10^4 / 0.05) = 12.206.
    Runtime
        O(1).
    """
    scale = float(positive_rational("scale", scale, allow_float=True))
    beta = check_beta(beta)
    dimension = check_dimension(dimension)
    return math.nextafter(math.log(dimension / beta) * scale, math.inf)


@dataclass(frozen=True)
class NoisyRelease:
    """A released value with an error bar: ``|value - truth| <= half_width`` for
    every coordinate simultaneously, with probability at least ``1 - beta``.

    ``truth`` is the (clamped) query value the mechanism was given. The
    half-width depends only on public parameters (noise scale, beta, dimension),
    never on the data. ``value`` is what ``release`` returns (int, float or array).
    """

    value: object
    half_width: float
    beta: float

    @property
    def confidence(self) -> float:
        return 1.0 - self.beta

    @property
    def lower(self):
        return np.subtract(self.value, self.half_width) if np.ndim(self.value) else \
            self.value - self.half_width

    @property
    def upper(self):
        return np.add(self.value, self.half_width) if np.ndim(self.value) else \
            self.value + self.half_width

    def covers(self, truth) -> bool:
        """True iff every coordinate of ``truth`` lies in [lower, upper]."""
        error = np.abs(np.asarray(self.value, dtype=float) - np.asarray(truth, dtype=float))
        return bool(np.all(error <= self.half_width))


class WithErrorBars:
    """Adds :meth:`release_with_error` to a mechanism that defines ``release`` and
    ``confidence_interval_half_width(beta, dimension)``."""

    def release_with_error(self, value, beta, *, budget=None) -> NoisyRelease:
        """``release`` plus the simultaneous half-width at confidence 1 - beta."""
        beta = check_beta(beta)
        dimension = self._interval_dimension(value)
        output = self.release(value, budget=budget)
        return NoisyRelease(output, self.confidence_interval_half_width(beta, dimension), beta)

    def _interval_dimension(self, value) -> int:
        """How many coordinates the interval must cover simultaneously."""
        return max(1, int(np.size(value)))
