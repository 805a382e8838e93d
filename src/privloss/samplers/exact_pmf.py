"""High-precision reference values for the discrete Laplace and Gaussian laws.

For tests and summaries only (the samplers never call these).  Computed with
mpmath at ``dps`` significant digits (default 40); parameters are converted to
exact rationals first (floats are accepted here and mean their exact binary
value).  Every infinite series is truncated where the neglected tail is
provably below ``10**-(dps + 5)`` times the leading term (bounds stated at each
function), so results are accurate to about ``dps - 2`` digits.

mpmath is imported lazily (it is a test dependency of privloss).
"""

from __future__ import annotations

import math
from fractions import Fraction

from privloss.samplers._params import positive_rational

__all__ = [
    "discrete_gaussian_normalizer",
    "discrete_gaussian_pmf",
    "discrete_gaussian_variance",
    "discrete_gaussian_mass",
    "discrete_laplace_pmf",
    "discrete_laplace_variance",
    "discrete_laplace_variance_float",
    "discrete_laplace_mass",
]

DEFAULT_DPS = 40


def _mpmath():
    try:
        import mpmath
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise ImportError("the exact pmf helpers need mpmath (pip install mpmath)") from error
    return mpmath


def _mp_rational(mp, value: Fraction):
    return mp.mpf(value.numerator) / value.denominator


def _parameter(name, value) -> Fraction:
    return positive_rational(name, value, allow_float=True)


# ---------------------------------------------------------------------------
# discrete Gaussian
# ---------------------------------------------------------------------------

def _truncation(mp, s2, dps):
    """M with sum_{|y| > M} y^2 exp(-y^2/(2 s2)) < 10^-(dps+5) (for s2 <= 1-ish).

    Terms beyond M decrease at least geometrically once y^2 > 2 s2 (ratio
    <= exp(-(2M+1)/(2 s2)) * ((M+2)/(M+1))^2 < 1/2 for the M chosen here), so the
    tail is at most twice its first term, which is below the target.
    """
    log_target = (dps + 10) * mp.log(10)
    return int(mp.ceil(mp.sqrt(2 * s2 * log_target))) + 10


def _direct_sums(mp, s2, dps):
    """(sum exp(-y^2/(2 s2)), sum y^2 exp(-y^2/(2 s2))) over |y| <= M, M from _truncation."""
    m = _truncation(mp, s2, dps)
    z = mp.mpf(1)
    second = mp.mpf(0)
    for y in range(1, m + 1):
        term = mp.exp(-mp.mpf(y * y) / (2 * s2))
        z += 2 * term
        second += 2 * y * y * term
    return z, second


def discrete_gaussian_normalizer(sigma_squared, *, dps: int = DEFAULT_DPS):
    """Z(sigma^2) = sum_y exp(-y^2/(2 sigma^2)) (mpmath number).

    Direct sum for sigma^2 <= 1; for sigma^2 > 1 the Poisson-summation form
    Z = sqrt(2 pi sigma^2) sum_y exp(-2 pi^2 sigma^2 y^2), whose terms fall even
    faster.  Truncation as in the module docstring.
    """
    mp = _mpmath()
    sigma_squared = _parameter("sigma_squared", sigma_squared)
    with mp.workdps(dps + 10):
        s2 = _mp_rational(mp, sigma_squared)
        if sigma_squared <= 1:
            z, _ = _direct_sums(mp, s2, dps)
        else:
            dual = 1 / (4 * mp.pi ** 2 * s2)
            z = mp.sqrt(2 * mp.pi * s2) * _direct_sums(mp, dual, dps)[0]
        return +z


def discrete_gaussian_pmf(x: int, sigma_squared, *, dps: int = DEFAULT_DPS):
    """P[X = x] for X ~ N_Z(0, sigma^2)."""
    mp = _mpmath()
    sigma_squared = _parameter("sigma_squared", sigma_squared)
    with mp.workdps(dps + 10):
        s2 = _mp_rational(mp, sigma_squared)
        value = mp.exp(-mp.mpf(int(x)) ** 2 / (2 * s2)) / discrete_gaussian_normalizer(
            sigma_squared, dps=dps)
        return +value


def discrete_gaussian_variance(sigma_squared, *, dps: int = DEFAULT_DPS):
    """Var[X] for X ~ N_Z(0, sigma^2) (slightly below sigma^2).

    Direct sum for sigma^2 <= 1; otherwise the Poisson identity
    Var(s) = s (1 - 4 pi^2 s Var(1/(4 pi^2 s))) ([CKS], "Lemma 20" in v3), with
    the inner variance summed directly.
    """
    mp = _mpmath()
    sigma_squared = _parameter("sigma_squared", sigma_squared)
    with mp.workdps(dps + 10):
        s2 = _mp_rational(mp, sigma_squared)
        if sigma_squared <= 1:
            z, second = _direct_sums(mp, s2, dps)
            return +(second / z)
        dual = 1 / (4 * mp.pi ** 2 * s2)
        z, second = _direct_sums(mp, dual, dps)
        return +(s2 * (1 - 4 * mp.pi ** 2 * s2 * (second / z)))


def _hermite_e(n: int, x, mp):
    """Probabilists' Hermite polynomial He_n(x) by the three-term recurrence."""
    previous, current = mp.mpf(1), x
    if n == 0:
        return previous
    for k in range(1, n):
        previous, current = current, x * current - k * previous
    return current


# Euler-Maclaurin is used for ranges longer than this (and sigma >= 100).
_DIRECT_RANGE = 4000
_EM_ORDER = 8  # correction terms B_2 .. B_16


def _em_partial(mp, s2, lo, hi):
    """sum_{y=lo}^{hi} exp(-y^2/(2 s2)) by Euler-Maclaurin (hi may be mp.inf).

    f(y) = exp(-y^2/(2 s2)), f^(n)(y) = (-1)^n s^-n He_n(y/s) f(y) with s = sqrt(s2).
    Remainder after J = _EM_ORDER correction terms:
    |R| <= 2 zeta(2J)/(2 pi)^(2J) * integral |f^(2J)|
        <= 2 zeta(2J)/(2 pi)^(2J) * sqrt(2 pi (2J)!) * s^(1-2J)   (Cauchy-Schwarz,
    E[He_n(N)^2] = n!), i.e. below 1e-39 * sqrt(2 pi s2) for s >= 100.
    """
    s = mp.sqrt(s2)
    scale = s * mp.sqrt(2)

    def f(y):
        return mp.exp(-y * y / (2 * s2))

    def derivative(n, y):
        return (-1) ** n * s ** (-n) * _hermite_e(n, y / s, mp) * f(y)

    lo = mp.mpf(lo)
    if hi == mp.inf:
        integral = s * mp.sqrt(mp.pi / 2) * mp.erfc(lo / scale)
        total = integral + f(lo) / 2
        for j in range(1, _EM_ORDER + 1):
            total -= mp.bernoulli(2 * j) / mp.factorial(2 * j) * derivative(2 * j - 1, lo)
        return total
    hi = mp.mpf(hi)
    if lo >= 0:
        integral = s * mp.sqrt(mp.pi / 2) * (mp.erfc(lo / scale) - mp.erfc(hi / scale))
    else:
        integral = s * mp.sqrt(mp.pi / 2) * (mp.erf(hi / scale) - mp.erf(lo / scale))
    total = integral + (f(lo) + f(hi)) / 2
    for j in range(1, _EM_ORDER + 1):
        total += mp.bernoulli(2 * j) / mp.factorial(2 * j) * (
            derivative(2 * j - 1, hi) - derivative(2 * j - 1, lo))
    return total


def discrete_gaussian_mass(lo, hi, sigma_squared, *, dps: int = DEFAULT_DPS):
    """P[lo <= X <= hi] for X ~ N_Z(0, sigma^2); ``None`` means unbounded.

    Exact term-by-term sum for short ranges (and for sigma < 100, where the
    terms die out within a few hundred sigma); Euler-Maclaurin with an explicit
    remainder bound (below 1e-39 relative) for long ranges when sigma >= 100.
    """
    mp = _mpmath()
    sigma_squared = _parameter("sigma_squared", sigma_squared)
    if lo is not None and hi is not None and hi < lo:
        return mp.mpf(0)
    with mp.workdps(dps + 10):
        s2 = _mp_rational(mp, sigma_squared)
        z = discrete_gaussian_normalizer(sigma_squared, dps=dps)
        if lo is None and hi is None:
            return mp.mpf(1)
        if lo is None:  # P[X <= hi] = P[X >= -hi]
            lo, hi = -hi, None
        if sigma_squared < 10_000:
            m = _truncation(mp, s2, dps) + 1
            start = max(int(lo), -m)
            stop = m if hi is None else min(int(hi), m)
            total = mp.fsum(mp.exp(-mp.mpf(y * y) / (2 * s2)) for y in range(start, stop + 1))
            return +(total / z)
        if hi is not None and hi - lo <= _DIRECT_RANGE:
            total = mp.fsum(mp.exp(-mp.mpf(y * y) / (2 * s2)) for y in range(int(lo), int(hi) + 1))
            return +(total / z)
        upper = mp.inf if hi is None else int(hi)
        return +(_em_partial(mp, s2, int(lo), upper) / z)


# ---------------------------------------------------------------------------
# discrete Laplace (closed forms, no truncation)
# ---------------------------------------------------------------------------

def _laplace_ratio(mp, scale: Fraction):
    return mp.exp(-1 / _mp_rational(mp, scale))


def discrete_laplace_pmf(x: int, scale, *, dps: int = DEFAULT_DPS):
    """P[Z = x] = (1 - r)/(1 + r) r^|x| with r = exp(-1/scale)."""
    mp = _mpmath()
    scale = _parameter("scale", scale)
    with mp.workdps(dps + 10):
        r = _laplace_ratio(mp, scale)
        return +((1 - r) / (1 + r) * r ** abs(int(x)))


def discrete_laplace_variance(scale, *, dps: int = DEFAULT_DPS):
    """Var[Z] = 2 r / (1 - r)^2 = 2 e^(1/scale) / (e^(1/scale) - 1)^2."""
    mp = _mpmath()
    scale = _parameter("scale", scale)
    with mp.workdps(dps + 10):
        r = _laplace_ratio(mp, scale)
        return +(2 * r / (1 - r) ** 2)


def discrete_laplace_variance_float(scale) -> float:
    """``float(discrete_laplace_variance(scale))`` without mpmath where possible.

    Computed with the standard library's ``decimal`` at 80 digits (its
    ``exp`` is correctly rounded) as ``2 r / (1 - r)^2``, ``r = exp(-1/scale)``,
    then rounded to the nearest float.  The 80-digit value and mpmath's
    50-digit one both lie within 1e-45 relative of the true variance, so they
    round to the same float unless the variance is within that distance of the
    midpoint between two floats: then (and for a scale above 1e20, where
    ``1 - r`` loses digits) mpmath decides, as before."""
    import decimal

    scale = _parameter("scale", scale)
    if scale <= 1e20:
        with decimal.localcontext(decimal.Context(prec=80)) as context:
            r = (-(decimal.Decimal(scale.denominator) / scale.numerator)).exp()
            value = 2 * r / (1 - r) ** 2
            result = float(value)
            neighbour = math.nextafter(result, math.inf if value > decimal.Decimal(result)
                                       else -math.inf)
            midpoint = (decimal.Decimal(result) + decimal.Decimal(neighbour)) / 2
            if abs(value - midpoint) > value * decimal.Decimal("1e-40"):
                return result
    return float(discrete_laplace_variance(scale))


def discrete_laplace_mass(lo, hi, scale, *, dps: int = DEFAULT_DPS):
    """P[lo <= Z <= hi] (``None`` = unbounded), by closed-form geometric sums."""
    mp = _mpmath()
    scale = _parameter("scale", scale)
    if lo is not None and hi is not None and hi < lo:
        return mp.mpf(0)
    with mp.workdps(dps + 10):
        r = _laplace_ratio(mp, scale)

        def upper_tail(k):  # P[Z >= k] for k >= 1
            return r ** k / (1 + r)

        def at_least(k):  # P[Z >= k] for any integer k (None = -inf)
            if k is None:
                return mp.mpf(1)
            if k >= 1:
                return upper_tail(k)
            return 1 - upper_tail(1 - k)  # P[Z >= k] = 1 - P[Z <= k-1] = 1 - P[Z >= 1-k]

        high_part = mp.mpf(0) if hi is None else at_least(int(hi) + 1)
        return +(at_least(None if lo is None else int(lo)) - high_part)
