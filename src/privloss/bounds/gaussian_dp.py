"""Exact composition of Gaussian mechanisms through Gaussian differential privacy.

Definition
    A mechanism is mu-GDP if its tradeoff function is at least G_mu = T(N(0,1), N(mu,1))
    on every pair of neighbours [DRS Def. 2.6]. The Gaussian mechanism with
    l2-sensitivity s and noise N(0, sigma^2 I) is exactly (s/sigma)-GDP
    [DRS Thm 2.7], and mu_i-GDP mechanisms compose to sqrt(sum mu_i^2)-GDP,
    adaptively and tightly [DRS Cor. 3.3]. Its privacy profile is
    delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2) [DRS Cor. 2.13].
Interaction models
    non-adaptive, adaptive, set-wise and fully adaptive: the composition theorem is
    adaptive, the total does not depend on the order, and Smith and Thakurta
    (2022, "Fully adaptive composition for Gaussian differential privacy") show
    that mechanisms whose mu_i are themselves chosen adaptively, with
    sum mu_i^2 <= mu^2 on every run, are still mu-GDP (the filter rule).
What is (and is not) Gaussian DP
    Only the continuous Gaussian mechanism (``privloss.events.Gaussian``, groups of
    it, parallel branches of it). The discrete Gaussian is *not* exactly GDP (its
    PLD is a lattice law; [CKS] bound it by zCDP and by an explicit sum): it is
    left to the exact PLD and zCDP routes. A subsampled Gaussian is not tightly GDP
    (only asymptotically, [DRS] Thm 4.2); the accountant reads it as its base
    (s/sigma)-GDP, valid because subsampling never increases the privacy profile,
    but loose (the subsampling bounds are the tight ones). No theorem combines a zCDP guarantee with
    GDP tightly (rho-zCDP does not imply any mu-GDP: the discrete Gaussian is
    rho-zCDP), so profiles with zCDP events are left to the zCDP/Renyi routes.
Numerics
    For a = -eps/mu + mu/2 < 0 the profile is written
    delta = Phi(a) (1 - erfcx(-b/sqrt 2) / erfcx(-a/sqrt 2)), b = a - mu, because
    e^eps Phi(b) / Phi(a) = erfcx(-b/sqrt 2)/erfcx(-a/sqrt 2) exactly (a^2 - b^2 = -2 eps):
    no e^eps overflow and no cancellation of two nearly equal tails at large eps.
    The log of that ratio is computed without cancelling logs: by the asymptotic
    series of erfcx for -a/sqrt 2 >= 7 (ratio of the x's by log1p, the series ratio
    term by term with expm1), by Gauss-Legendre integration of d/dx log erfcx over
    narrow windows, else directly. a and b are carried as compensated (high, low)
    pairs (exact products and sums), so eps/mu does not leak its rounding. For a >= 0,
    delta = (erf(a/sqrt 2) - erf(b/sqrt 2))/2 - expm1(eps) Phi(b), whose terms do
    not cancel. Every step's float error is bounded (scipy's erfcx and log_ndtr
    accuracy measured against mpmath, see the constants) and added: the result is
    never below the exact value and, tested on 400 seeded points with mu in
    [1e-4, 1e4], within 1e-12 relative of it (for delta >= 1e-250).
    epsilon(delta) is bisected on this profile to a relative 1e-15 and returns the
    upper end.
Citation
    [DRS] Dong, Roth, Su, "Gaussian differential privacy", JRSS-B 2022;
    Balle and Wang, ICML 2018, Thm 8 (the same profile); Smith and Thakurta 2022.
"""

from __future__ import annotations

import math

from privloss.bounds._numeric import check_nonnegative, check_probability

#: interaction models the GDP composition theorem covers (Interaction values)
INTERACTIONS = ("non-adaptive", "adaptive", "setwise", "fully-adaptive")

_U = 2.0 ** -53
_SQRT2 = math.sqrt(2.0)
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
#: assumed relative accuracy of scipy's erf/erfc/erfcx: measured against mpmath at 40
#: digits, at most 6.9 ulps for erfcx on [0, 60]; we allow 16
_SPECIAL_ERROR = 16 * _U
#: log_ndtr: measured relative error of log Phi at most 4.7 ulps on [-1e6, 0]; we allow 6,
#: i.e. an absolute error of 6 u |log Phi| in the logarithm (a relative error of Phi)
_LOG_NDTR_ULPS = 6


def _two_sum(x: float, y: float) -> tuple[float, float]:
    """s + e = x + y exactly (Knuth)."""
    total = x + y
    virtual = total - x
    return total, (x - (total - virtual)) + (y - virtual)


def _split(x: float) -> tuple[float, float]:
    scaled = 134217729.0 * x                      # 2^27 + 1 (Dekker)
    high = scaled - (scaled - x)
    return high, x - high


def _two_product(x: float, y: float) -> tuple[float, float]:
    """p + e = x * y exactly (Dekker; |x|, |y| well inside the float range)."""
    product = x * y
    xh, xl = _split(x)
    yh, yl = _split(y)
    return product, ((xh * yh - product) + xh * yl + xl * yh) + xl * yl


def _arguments(mu: float, epsilon: float):
    """a = mu/2 - eps/mu and b = -mu/2 - eps/mu as (high, low) pairs whose sum is exact
    to about u^2 (compensated division and sums), and a bound on what is left."""
    ratio = epsilon / mu
    if max(abs(ratio), mu, epsilon) < 1e150:
        product, product_error = _two_product(ratio, mu)
        remainder = ((epsilon - product) - product_error) / mu      # ratio + remainder = eps/mu
    else:
        remainder = 0.0
    a_high, a_error = _two_sum(0.5 * mu, -ratio)
    b_high, b_error = _two_sum(-0.5 * mu, -ratio)
    a_low, b_low = a_error - remainder, b_error - remainder
    if remainder == 0.0 and ratio != 0.0 and max(abs(ratio), mu, epsilon) >= 1e150:
        left = _U * (abs(ratio) + abs(a_high) + abs(b_high))     # uncompensated division
    else:
        left = 4 * _U * _U * (abs(ratio) + abs(a_high) + abs(b_high)) + 1e-300
    return a_high, a_low, b_high, b_low, left


def _asymptotic_log_ratio(x_low: float, width: float) -> tuple[float, float]:
    """log erfcx(x_low + width) - log erfcx(x_low) for x_low >= 7, with an error bound.

    erfcx(x) = S(x) / (x sqrt(pi)), S(x) = 1 + sum_{n>=1} c_n x^{-2n},
    c_n = (-1)^n (2n-1)!!/2^n (asymptotic; truncated where the terms fall below
    1e-18 of the sum, remainder below the first omitted term, and below e^{-x^2} for
    the optimal truncation: far below u at x >= 7). The ratio of the x's is
    -log1p(width/x_low); the S ratio is summed term by term as
    c_n x_low^{-2n} expm1(-2n log1p(width/x_low)), so nothing cancels.
    """
    head = math.log1p(width / x_low)
    inverse = 1.0 / (x_low * x_low)
    coefficient, power = 1.0, 1.0
    total, difference, magnitude = 0.0, 0.0, 0.0
    for n in range(1, 61):
        coefficient *= -(2 * n - 1) / 2.0
        power *= inverse
        term = coefficient * power
        total += term
        change = term * math.expm1(-2 * n * head)
        difference += change
        magnitude += abs(change)
        if abs(term) < 1e-18:
            break
    correction = math.log1p(difference / (1.0 + total))
    error = 4 * _U * head + 8 * _U * (abs(correction) + magnitude) + 1e-300
    return correction - head, error


#: 8-point Gauss-Legendre rule on [-1, 1]
_GL8 = (
    (-0.9602898564975363, 0.1012285362903763), (-0.7966664774136267, 0.2223810344533745),
    (-0.5255324099163290, 0.3137066458778873), (-0.1834346424956498, 0.3626837833783620),
    (0.1834346424956498, 0.3626837833783620), (0.5255324099163290, 0.3137066458778873),
    (0.7966664774136267, 0.2223810344533745), (0.9602898564975363, 0.1012285362903763),
)


def _log_erfcx_ratio(x_low: float, width: float) -> tuple[float, float]:
    """(log erfcx(x_low + width) - log erfcx(x_low), absolute error bound) for x_low >= 0.

    The difference of two nearly equal logarithms loses accuracy when the width is
    small, so: for x >= 7 the asymptotic form (log of the ratio of x's by log1p, plus
    the small series correction); for narrow intervals the integral of
    d/dx log erfcx = 2x - 2/(sqrt(pi) erfcx(x)) by 8-point Gauss-Legendre (the
    integrand is analytic; its float error is bounded node by node); else the
    plain difference.
    """
    from scipy.special import erfcx

    if x_low >= 7.0:
        return _asymptotic_log_ratio(x_low, width)
    if width <= 0.5:
        half = 0.5 * width
        middle = x_low + half
        total, error = 0.0, 0.0
        for node, weight in _GL8:
            x = middle + half * node
            h = 2.0 / (math.sqrt(math.pi) * float(erfcx(x)))
            total += weight * (2.0 * x - h)
            error += weight * (2.0 * abs(x) + h)
        # erfcx relative 8u, the products and the sum: 16u per node; GL remainder
        # (analytic integrand, 16th derivative) is far below u for width <= 0.5
        return half * total, half * error * 16 * _U + 4 * _U * half * abs(total) + 1e-300
    value = math.log(float(erfcx(x_low + width))) - math.log(float(erfcx(x_low)))
    return value, 2 * _SPECIAL_ERROR + 2 * _U * (abs(value) + 2.0)


def _delta_and_error(mu: float, epsilon: float) -> tuple[float, float]:
    """(delta, relative error bound) of the mu-GDP profile at epsilon (mu > 0 finite).

    Error model: scipy's log_ndtr, erf, erfc and erfcx are accurate to a few ulps
    (``_SPECIAL_ERROR`` absolute in their logarithm); the arguments a and b are
    carried as compensated (high, low) pairs and corrected to first order, so the
    division eps/mu and the sums do not leak into the result; what is left is
    bounded and added.
    """
    from scipy.special import erf, log_ndtr

    a, a_low, b, b_low, left = _arguments(mu, epsilon)
    if a >= 0:
        # b < 0 <= a: the erf difference is a sum of two positive terms
        density_a = math.exp(-0.5 * a * a - _LOG_SQRT_2PI)
        density_b = math.exp(-0.5 * b * b - _LOG_SQRT_2PI)
        head = 0.5 * (float(erf(a / _SQRT2)) - float(erf(b / _SQRT2))) \
            + density_a * a_low - density_b * b_low
        if epsilon > 0:
            log_phi_b = float(log_ndtr(b))
            hazard_b = math.exp(-0.5 * b * b - _LOG_SQRT_2PI - log_phi_b)
            log_expm1 = math.log(math.expm1(epsilon)) if epsilon < 30 else \
                epsilon + math.log1p(-math.exp(-epsilon))
            tail = math.exp(log_expm1 + log_phi_b + hazard_b * b_low)
            tail_error = (_SPECIAL_ERROR + _U * (abs(log_expm1) + (_LOG_NDTR_ULPS + 1) * abs(log_phi_b) + 4)
                          + (abs(b) + 1.0) * (left + (abs(b) + 1.0) * b_low * b_low))
        else:
            tail, tail_error = 0.0, 0.0
        value = head - tail
        if not (value > 0 and math.isfinite(value)):
            return 0.0, math.inf
        # erf's division by sqrt 2 rounds its argument: density times u |x| (both terms)
        head_error = (_SPECIAL_ERROR + 2 * _U) * head + 0.4 * (2 * _U * (abs(a) + abs(b)) + 2 * left
                                                               + a_low * a_low + b_low * b_low)
        return value, (head_error + tail_error * tail) / value + 2 * _U
    log_phi_a = float(log_ndtr(a))
    hazard_a = math.exp(-0.5 * a * a - _LOG_SQRT_2PI - log_phi_a)      # phi/Phi <= |a| + 1
    log_phi_a += hazard_a * a_low
    # e^eps Phi(b)/Phi(a) = erfcx(-b/sqrt 2)/erfcx(-a/sqrt 2); -b/sqrt 2 = -a/sqrt 2 + mu/sqrt 2
    x_low = -(a + a_low) / _SQRT2
    log_ratio, ratio_error = _log_erfcx_ratio(max(x_low, 0.0), mu / _SQRT2)
    if not log_ratio < 0:
        return 0.0, math.inf
    one_minus = -math.expm1(log_ratio)
    value = math.exp(log_phi_a) * one_minus
    # log_ratio integrates g = d/dx log erfcx over [x_low, x_low + w], w = mu/sqrt 2. The
    # rounding of x_low shifts the window: effect <= max|g'| w shift, 0 < g' <= 0.73 on
    # [0, inf) (checked with mpmath on [0, 60]; g' -> 1/x^2), we use 2. The rounding of w
    # (2u relative) changes it by |g(x_b)| 2u w, |g(x)| <= 2/(x + sqrt(x^2 + 2))
    # (Abramowitz-Stegun 7.1.13), x_b >= x_low
    width = mu / _SQRT2
    shift = 2 * _U * abs(x_low) + left
    ratio_error += 2.0 * width * shift \
        + 2.0 / (x_low + math.sqrt(x_low * x_low + 2.0)) * 2 * _U * width
    amplification = math.exp(log_ratio) / one_minus
    error = (_SPECIAL_ERROR + _U * ((_LOG_NDTR_ULPS + 1) * abs(log_phi_a) + 2.0)
             + (abs(a) + 1.0) * (left + (abs(a) + 1.0) * a_low * a_low)
             + ratio_error * amplification + 4 * _U)
    return value, error


def gdp_delta(mu: float, epsilon: float) -> float:
    """Exact delta(epsilon) of a mu-GDP mechanism, rounded up.

    Definition
        delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2); 0 for mu = 0,
        1 for mu = inf; 0 at eps = inf.
    Privacy guarantee
        mu-GDP holds iff (eps, delta(eps))-DP holds for every eps >= 0; the
        returned value is at least the exact one (float error bounded and added).
    Citation
        [DRS] Cor. 2.13; Balle–Wang 2018 Thm 8.
    Runtime
        O(1), log space (no overflow for eps up to 1e300).
    """
    m = check_nonnegative("mu", mu, allow_inf=True)
    eps = check_nonnegative("epsilon", epsilon, allow_inf=True)
    if m == 0 or math.isinf(eps):
        return 0.0
    if math.isinf(m):
        return 1.0
    value, error = _delta_and_error(m, eps)
    if not math.isfinite(error) or error > 1e-3:
        # numeric trouble: fall back to the safe side (the first term alone bounds delta)
        from scipy.special import ndtr

        return min(1.0, float(ndtr(-eps / m + 0.5 * m)) * (1 + 1e-12) + 5e-324)
    return min(1.0, value * (1.0 + error) + 5e-324)


def _epsilon_upper_start(mu: float, delta: float) -> float:
    """An epsilon with delta(eps) <= Phi(a) <= delta: a = -sqrt(2 log(1/delta))."""
    return 0.5 * mu * mu + mu * math.sqrt(2.0 * -math.log(delta)) + mu


def gdp_epsilon(mu: float, delta: float, *, relative_tolerance: float = 1e-15) -> float:
    """Smallest epsilon with ``gdp_delta(mu, epsilon) <= delta``, rounded outward.

    Definition
        The inverse of the (strictly decreasing) mu-GDP privacy profile.
    Privacy guarantee
        A mu-GDP mechanism is (result, delta)-DP: the result re-checks
        (``gdp_delta(mu, result) <= delta``, with the rounded-up delta), and it is
        within ``relative_tolerance`` plus the delta error of the exact value.
        ``inf`` for delta = 0 (mu > 0); 0 when delta >= delta(0).
    Citation
        [DRS] Cor. 2.13; bracketed bisection.
    Runtime
        O(log(1/relative_tolerance)) profile evaluations (about 60; ~1 ms).
    """
    m = check_nonnegative("mu", mu, allow_inf=True)
    d = check_probability("delta", delta)
    if m == 0 or d >= 1:
        return 0.0
    if math.isinf(m) or d == 0:
        return math.inf
    if gdp_delta(m, 0.0) <= d:
        return 0.0
    high = _epsilon_upper_start(m, d)
    while gdp_delta(m, high) > d:
        high *= 2.0
        if not math.isfinite(high):
            return math.inf
    low = 0.0
    # bisect, geometric once low > 0, until the bracket is relatively tight
    for _ in range(400):
        if high - low <= relative_tolerance * high:
            break
        middle = 0.5 * (low + high) if low == 0 or high > 4 * low else math.sqrt(low * high)
        middle = min(max(middle, low), high)
        if middle in (low, high):
            break
        if gdp_delta(m, middle) <= d:
            high = middle
        else:
            low = middle
    return high


def composed_mu(mus_and_counts) -> float:
    """mu of the composition: sqrt(sum count * mu_i^2) [DRS Cor. 3.3], rounded up.

    ``mus_and_counts``: iterable of (mu_i >= 0, count >= 1). Exact summation
    (math.fsum), then one rounding up of a few ulps; inf if any mu_i is inf.
    """
    squares = []
    for mu, count in mus_and_counts:
        m = check_nonnegative("mu", mu, allow_inf=True)
        if math.isinf(m):
            return math.inf
        squares.append(count * m * m)
    total = math.fsum(squares)
    if not math.isfinite(total):
        return math.inf
    return math.sqrt(total) * (1.0 + 8 * _U)


def gaussian_composition_epsilon(mus_and_counts, target_delta: float) -> float:
    """Epsilon at ``target_delta`` of composed Gaussian mechanisms (exact, rounded outward).

    Definition
        mu = sqrt(sum count_i (s_i/sigma_i)^2); epsilon = :func:`gdp_epsilon` (mu, delta).
    Privacy guarantee
        Exact optimum for Gaussian mechanisms of any sigma and sensitivity under
        non-adaptive, adaptive, set-wise and fully adaptive composition
        (module docstring); never below it.
    Citation
        [DRS] Thm 2.7, Cor. 3.3, Cor. 2.13; Smith–Thakurta 2022.
    Runtime
        O(number of distinct atoms) + about 60 profile evaluations: milliseconds at k = 10^6.
    """
    return gdp_epsilon(composed_mu(mus_and_counts), target_delta)


def gaussian_composition_delta(mus_and_counts, target_epsilon: float) -> float:
    """Delta at ``target_epsilon`` of composed Gaussian mechanisms (exact, rounded up).

    Theorem, assumptions and runtime as :func:`gaussian_composition_epsilon`.
    """
    return gdp_delta(composed_mu(mus_and_counts), target_epsilon)
