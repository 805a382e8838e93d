"""Shared numerics for the bound functions: validation, log-space helpers and
safe (pessimistic) rounding and inversion.

Conventions every bound follows:

* Arguments are validated before any work; errors name the parameter, its value
  and the allowed range (``ValueError``; ``TypeError`` for a wrong type).
* A returned delta or epsilon is an *upper* bound on the true value: float
  error is pushed toward more privacy loss with :func:`round_up`.
* ``epsilon(delta)`` is obtained from a monotone non-increasing ``delta(epsilon)``
  by bracketing (:func:`invert_delta`); the returned epsilon always satisfies
  ``delta(epsilon) <= target`` when re-evaluated.
* Numeric trouble (NaN, overflow) gives the safe value: ``delta = 1`` or
  ``epsilon = inf``; never an optimistic one.
"""

from __future__ import annotations

import math
import numbers
from fractions import Fraction
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

#: Relative slack added to computed deltas and epsilons so that float error in
#: sums of at most ~1e5 terms cannot make a bound optimistic.
RELATIVE_SLACK = 1e-12
#: Absolute tolerance of the epsilon bisection (the answer is never below the truth).
EPSILON_TOLERANCE = 1e-12


class Bracket(NamedTuple):
    """Certified two-sided result: ``lower <= true optimum <= upper``.

    Accountants charge ``upper``; ``lower`` says how far from optimal that is.
    """

    lower: float
    upper: float

    @property
    def width(self) -> float:
        return self.upper - self.lower


# --------------------------------------------------------------------------
# validation
# --------------------------------------------------------------------------

def _as_float(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {value!r}")
    return float(value)


def check_nonnegative(name: str, value, *, allow_inf: bool = False) -> float:
    """Return ``value`` as float if it lies in [0, inf) (or [0, inf] with ``allow_inf``)."""
    x = _as_float(name, value)
    if math.isnan(x) or x < 0 or (math.isinf(x) and not allow_inf):
        upper = "inf]" if allow_inf else "inf)"
        raise ValueError(f"{name} must be in [0, {upper}, got {value!r}")
    return x


def check_positive(name: str, value) -> float:
    """Return ``value`` as float if it lies in (0, inf)."""
    x = _as_float(name, value)
    if math.isnan(x) or x <= 0 or math.isinf(x):
        raise ValueError(f"{name} must be in (0, inf), got {value!r}")
    return x


def check_probability(name: str, value, *, closed_upper: bool = True,
                      open_lower: bool = False) -> float:
    """Return ``value`` as float if it lies in [0, 1] (variants by the flags)."""
    x = _as_float(name, value)
    low_ok = x > 0 if open_lower else x >= 0
    high_ok = x <= 1 if closed_upper else x < 1
    if math.isnan(x) or not (low_ok and high_ok):
        interval = ("(" if open_lower else "[") + "0, 1" + ("]" if closed_upper else ")")
        raise ValueError(f"{name} must be in {interval}, got {value!r}")
    return x


def check_count(name: str, value, *, minimum: int = 1) -> int:
    """Return ``value`` as int if it is an integer >= ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer >= {minimum}, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def check_epsilon_list(name: str, values) -> np.ndarray:
    """Validate a non-empty sequence of finite non-negative epsilons."""
    arr = np.asarray(values, dtype=float).reshape(-1)
    if arr.size == 0:
        raise ValueError(f"{name} must be a non-empty sequence of epsilons in [0, inf)")
    bad = ~np.isfinite(arr) | (arr < 0)
    if bad.any():
        i = int(np.argmax(bad))
        raise ValueError(f"{name}[{i}] must be in [0, inf), got {arr[i]!r}")
    return arr


# --------------------------------------------------------------------------
# pessimistic rounding
# --------------------------------------------------------------------------

def exact_sum(values) -> float:
    """The correctly rounded sum of a float array (``math.fsum``), in O(1) extra
    work for a constant array: n x as one float product is the correctly rounded
    value of the exact n x, which is what fsum returns (n <= 2^53 is exact)."""
    values = np.asarray(values, dtype=np.float64)
    if values.size == 0:
        return 0.0
    first = values.flat[0]
    if values.size > 64 and math.isfinite(first) and bool(np.all(values == first)):
        return float(first) * values.size
    return math.fsum(values.ravel())


def exact_rational_sum(values, counts) -> Fraction:
    """The exact real sum of counts[i] * values[i] (finite floats, integer counts):
    floats are integers over powers of two, so the largest denominator is common to
    all and the sum is one integer sum (fast for 10^5 distinct values, unlike a sum
    of Fractions)."""
    ratios = [float(value).as_integer_ratio() for value in np.asarray(values, dtype=float).tolist()]
    if not ratios:
        return Fraction(0)
    common = max(denominator for _, denominator in ratios)
    total = sum(int(count) * numerator * (common // denominator)
                for (numerator, denominator), count in zip(ratios, np.asarray(counts).tolist()))
    return Fraction(total, common)


def round_up(value: float, *, relative: float = RELATIVE_SLACK) -> float:
    """Push a computed non-negative loss (delta or epsilon) up by a relative slack.

    NaN becomes ``inf`` (the caller clips deltas at 1 with :func:`safe_delta`).
    """
    if math.isnan(value):
        return math.inf
    if value <= 0:
        return max(value, 0.0)
    return value * (1.0 + relative) + 5e-324


def safe_delta(value: float) -> float:
    """Round a computed delta up and clip it to [0, 1]; NaN becomes 1."""
    if math.isnan(value):
        return 1.0
    return min(1.0, round_up(max(value, 0.0)))


# --------------------------------------------------------------------------
# log-space helpers
# --------------------------------------------------------------------------

#: up to this many values, all at most this large, log-gamma runs through
#: ``math.lgamma``, so small problems never import ``scipy.special`` (0.2 s); larger
#: arguments keep SciPy's ``gammaln``, whose last-ulp behaviour the large-k
#: references were computed with (the two differ by a few ulps of lgamma, which at
#: k = 10^5 moves a Theorem 2 epsilon by 6e-12 relative)
_SMALL_GAMMA = 4096
_SMALL_GAMMA_ARGUMENT = 1e4


def log_gamma(x):
    """log Gamma(x) for x > 0, vectorised (``math.lgamma`` for small inputs,
    ``scipy.special.gammaln`` otherwise; both accurate to a few ulps)."""
    x = np.asarray(x, dtype=float)
    if x.size <= _SMALL_GAMMA and (x.size == 0 or float(np.max(x)) <= _SMALL_GAMMA_ARGUMENT):
        if x.ndim == 0:
            return np.float64(math.lgamma(float(x)))
        return np.fromiter((math.lgamma(value) for value in x.ravel()), dtype=float,
                           count=x.size).reshape(x.shape)
    from scipy.special import gammaln
    return gammaln(x)


def log_binomial(n, k):
    """log C(n, k) via log-gamma; vectorised over ``k``."""
    k = np.asarray(k, dtype=float)
    return log_gamma(n + 1.0) - log_gamma(k + 1.0) - log_gamma(n - k + 1.0)


def logsumexp(values) -> float:
    """log(sum(exp(values))) of a 1-d sequence, shifted by its maximum (-inf
    when empty or all -inf; +inf if any value is +inf)."""
    values = np.asarray(values, dtype=float).ravel()
    if values.size == 0:
        return -math.inf
    top = float(np.max(values))
    if math.isinf(top):
        return top
    return top + math.log(float(np.sum(np.exp(values - top))))


def log1mexp(x):
    """log(1 - exp(x)) for x <= 0, accurate near 0 and for very negative x."""
    x = np.asarray(x, dtype=float)
    with np.errstate(divide="ignore"):
        return np.where(x > -math.log(2.0), np.log(-np.expm1(x)), np.log1p(-np.exp(x)))


def log_sigmoid(x: float) -> float:
    """log(e^x / (1 + e^x)) without overflow."""
    return -float(np.logaddexp(0.0, -x))


# --------------------------------------------------------------------------
# inversion
# --------------------------------------------------------------------------

def invert_delta(delta_of_epsilon: Callable[[float], float], target_delta: float,
                 upper: float, *, tolerance: float = EPSILON_TOLERANCE,
                 max_iterations: int = 400) -> float:
    """Smallest epsilon in [0, upper] with ``delta_of_epsilon(epsilon) <= target_delta``.

    ``delta_of_epsilon`` must be non-increasing (every privacy profile is).
    Bisection keeps the invariant ``delta(hi) <= target``; the returned value is
    ``hi``, so re-evaluating the profile at it never exceeds the target. The
    bracket is closed to ``tolerance * max(1, hi)``. If even ``upper`` does not
    meet the target, ``inf`` is returned (the safe answer).
    """
    if delta_of_epsilon(0.0) <= target_delta:
        return 0.0
    hi = float(upper)
    if not math.isfinite(hi) or delta_of_epsilon(hi) > target_delta:
        # expand a finite upper limit a few times before giving up
        hi = max(hi, 1.0) if math.isfinite(hi) else 1.0
        for _ in range(60):
            if delta_of_epsilon(hi) <= target_delta:
                break
            hi *= 2.0
        else:
            return math.inf
    lo = 0.0
    for _ in range(max_iterations):
        if hi - lo <= tolerance * max(1.0, hi):
            break
        mid = 0.5 * (lo + hi)
        if delta_of_epsilon(mid) <= target_delta:
            hi = mid
        else:
            lo = mid
    return hi


def certify_epsilon(delta_of_epsilon: Callable[[float], float], target_delta: float,
                    epsilon: float, *, max_steps: int = 64) -> float:
    """Nudge a closed-form epsilon up until the profile confirms it.

    Returns the smallest of ``epsilon * (1 + 2^j * 1e-15)`` (j = 0, 1, ...)
    whose re-evaluated delta is at most ``target_delta``; ``inf`` if none is.
    """
    if not math.isfinite(epsilon):
        return math.inf
    if epsilon < 0:
        epsilon = 0.0
    step = max(abs(epsilon), 1e-300) * 1e-15
    candidate = epsilon
    for _ in range(max_steps):
        if delta_of_epsilon(candidate) <= target_delta:
            return candidate
        candidate = epsilon + step
        step *= 2.0
    return math.inf
