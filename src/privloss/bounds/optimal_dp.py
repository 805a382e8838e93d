"""Optimal homogeneous composition of (epsilon, delta0)-DP mechanisms
([CR] Theorem 1 = [KOV] Theorem 3.3 in Murtagh–Vadhan's form).

The worst case of k adaptively chosen (epsilon, delta0)-DP mechanisms is k
copies of randomized response, so the optimal delta is a binomial sum; between
lattice points (k - 2i) epsilon it is affine in e^{epsilon_g}, which gives the
exact, root-free inversion used by :func:`optimal_dp_epsilon`.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from privloss._exact import multiple_upper
from privloss.bounds import _binomial_window
from privloss.bounds._numeric import (certify_epsilon, check_count, check_nonnegative,
                                      check_probability, log1mexp, log_binomial, logsumexp,
                                      round_up, safe_delta)


def _log_norm(k: int, epsilon: float) -> float:
    """log (1 + e^epsilon)^k."""
    return k * float(np.logaddexp(0.0, epsilon))


#: above this many active terms, sum a window around the largest term and bound
#: the rest (the terms are log-concave in i); below, sum every term
WINDOW_FROM = 200_000


def _log_terms(k: int, epsilon: float, epsilon_g: float, i: np.ndarray, last: int,
               last_exponent: float) -> np.ndarray:
    """log C(k,i) + (k-i) eps + log(1 - e^{eps_g + (2i-k) eps}) for the indices ``i``
    (the last active term's exponent given exactly: it alone can be tiny)."""
    exponent = epsilon_g + (2.0 * i - k) * epsilon          # log of the ratio, < 0
    exponent[i == last] = last_exponent
    exponent = np.minimum(exponent, 0.0)
    return log_binomial(k, i) + (k - i) * epsilon + log1mexp(exponent)


def _log_sum_of_terms(k: int, epsilon: float, epsilon_g: float, last: int,
                      last_exponent: float) -> float:
    """log of the sum over i = 0..last of the terms of :func:`_log_terms`.

    Up to ``WINDOW_FROM`` terms, every term is summed. Beyond, the sum runs over a
    window containing the largest term, and each side outside it is bounded by its
    number of terms times the window's edge term: the terms are log-concave in i
    (log C(k,i) is concave, (k-i) eps affine, log(1 - e^x) concave in the affine
    x), hence unimodal, so every term outside is at most the edge term when the
    window holds the mode, which the slope at each edge checks (else the window
    doubles). The bound only adds mass: the answer rounds toward more privacy loss.
    """
    if last + 1 <= WINDOW_FROM:
        i = np.arange(last + 1, dtype=float)
        return float(logsumexp(_log_terms(k, epsilon, epsilon_g, i, last, last_exponent)))
    p = 1.0 / (1.0 + math.exp(epsilon))            # binomial mode of i near k p
    spread = math.sqrt(k * p * (1.0 - p))
    centre = min(int(k * p), last)
    width = int(60.0 * spread) + 200
    while True:
        low, high = max(0, centre - width), min(last, centre + width)
        i = np.arange(low, high + 1, dtype=float)
        terms = _log_terms(k, epsilon, epsilon_g, i, last, last_exponent)
        rising_at_low = low == 0 or terms[1] >= terms[0]
        falling_at_high = high == last or terms[-2] >= terms[-1]
        if (rising_at_low and falling_at_high) or (low == 0 and high == last):
            break
        width *= 2
    parts = [float(logsumexp(terms))]
    if low > 0:                          # i < low: each at most terms[0]
        parts.append(math.log(low) + float(terms[0]))
    if high < last:                      # i > high: each at most terms[-1]
        parts.append(math.log(last - high) + float(terms[-1]))
    return float(logsumexp(parts))


def _pure_delta(k: int, epsilon: float, epsilon_g: float, fast: str | None = None) -> float:
    """(1+e^eps)^-k sum_i C(k,i) [e^{(k-i) eps} - e^{eps_g + i eps}]_+, in log space."""
    if epsilon == 0:
        return 0.0
    # eps_g - k eps exactly (Fractions of the float inputs): near the largest loss the
    # float difference cancels catastrophically (relative error 1e-7 at 1e-7 below k eps)
    # and could even decide "beyond the largest loss" wrongly.
    exact_eps = Fraction(epsilon)
    gap = Fraction(epsilon_g) - k * exact_eps
    if gap >= 0:
        return 0.0
    # active terms: (k - i) eps > eps_g + i eps  <=>  i < (k eps - eps_g) / (2 eps)
    last = min(math.ceil(-gap / (2 * exact_eps)) - 1, k)
    if last < 0:
        return 0.0
    if k > WINDOW_FROM:
        # O(sqrt k) terms with a certified tail and float-error bound (the window is
        # cached per (k, eps)): term by term (no cancellation), or for ``fast`` the
        # O(1) closed form A - e^{eps_g} B (an upper or a lower bound) for bisection
        window = _binomial_window.window(k, epsilon)
        if fast == "lower":
            return window.pure_delta_lower(epsilon_g, last)
        bound = (window.pure_delta(epsilon_g, last) if fast == "upper" else
                 window.pure_delta_direct(epsilon_g, last, float(gap + 2 * last * exact_eps)))
        if bound is not None:
            return min(1.0, bound)
    log_sum = _log_sum_of_terms(k, epsilon, epsilon_g, last, float(gap + 2 * last * exact_eps))
    value = float(np.exp(log_sum - _log_norm(k, epsilon)))
    # log-gamma and the large exponents carry an absolute log error of a few ulps of
    # their magnitude (~1e-10 at k = 1e5): widen the outward rounding to match.
    magnitude = math.lgamma(k + 1.0) + k * epsilon + _log_norm(k, epsilon)
    return round_up(value, relative=1e-12 + 16 * 2.220446049250313e-16 * magnitude)


def optimal_dp_delta(k: int, epsilon: float, epsilon_g: float, *, delta0: float = 0.0) -> float:
    """Optimal delta of k-fold composition of (epsilon, delta0)-DP at ``epsilon_g``.

    Theorem: [CR] Theorem 1 = [KOV] Theorem 3.3, Murtagh–Vadhan homogeneous form:
    delta = 1 - (1 - delta0)^k (1 - (1+e^eps)^-k sum_i C(k,i) [e^{(k-i)eps} - e^{eps_g + i eps}]_+).
    Assumptions: adaptive composition (also covers non-adaptive and set-wise:
    all parameters equal), homogeneous epsilon and delta0.
    Guarantee: the exact optimum, rounded up by a relative 1e-12; clipped to [0, 1].
    For k above ``WINDOW_FROM``: the sum over a window of about 52 standard
    deviations of the binomial (O(sqrt k) terms, computed once per (k, eps)) plus a
    certified geometric bound on the tails and on the float error
    (:mod:`privloss.bounds._binomial_window`; within 1e-10 relative of mpmath).
    Runtime: O(k) up to ``WINDOW_FROM``; beyond, O(sqrt k) (k = 10^9: ~0.1 s).
    """
    k = check_count("k", k)
    eps = check_nonnegative("epsilon", epsilon)
    eg = check_nonnegative("epsilon_g", epsilon_g, allow_inf=True)
    d0 = check_probability("delta0", delta0)
    pure = 0.0 if math.isinf(eg) else _pure_delta(k, eps, eg)
    if d0 == 0:
        return safe_delta(pure)
    if d0 >= 1:
        return 1.0
    log_keep = k * math.log1p(-d0)
    # 1 - keep (1 - pure) = (1 - keep) + keep * pure, without cancellation
    return safe_delta(-math.expm1(log_keep) + math.exp(log_keep) * pure)


def _bisect(admits, low: float, high: float, relative: float) -> tuple[float, float]:
    """(low, high) with admits(high) and not admits(low) (monotone), high - low <=
    relative * high; ``admits(high)`` is assumed on entry."""
    while high - low > relative * high:
        middle = 0.5 * (low + high)
        if middle <= low or middle >= high:
            break
        if admits(middle):
            high = middle
        else:
            low = middle
    return low, high


def _large_k_epsilon(k: int, eps: float, target: float, d0: float) -> float:
    """[CR] Thm 1 inverted at large k without O(k) arrays: bisection on the O(1)
    closed-form bounds brackets the optimum (lower bound > target below the bracket,
    upper bound <= target at its top), then bisection on the term-by-term upper bound
    (no cancellation) narrows it to 2^-45 relative; the answer is certified by the
    term-by-term bound (``optimal_dp_delta(answer) <= target``)."""
    log_keep = k * math.log1p(-d0) if d0 > 0 else 0.0
    keep = math.exp(log_keep)

    def total(pure: float) -> float:
        return pure if d0 == 0 else -math.expm1(log_keep) + keep * pure

    def upper_fast(eg):
        return total(_pure_delta(k, eps, eg, "upper")) <= target

    def lower_fast(eg):
        return total(_pure_delta(k, eps, eg, "lower")) <= target

    def exact(eg):
        return safe_delta(total(_pure_delta(k, eps, eg))) <= target

    top = k * eps
    _, high = _bisect(upper_fast, 0.0, top, 2.0 ** -50)
    low, _ = _bisect(lower_fast, 0.0, high, 2.0 ** -50)
    if not exact(high):                      # the closed form's rounding: widen once
        high = top
    _, high = _bisect(exact, low, high, 2.0 ** -45)
    return high


def optimal_dp_epsilon(k: int, epsilon: float, target_delta: float, *, delta0: float = 0.0) -> float:
    """Optimal epsilon of k-fold composition of (epsilon, delta0)-DP at ``target_delta``.

    Theorem: [CR] Theorem 1 (see :func:`optimal_dp_delta`), inverted exactly:
    on each lattice piece ((k-2m) eps, (k-2m+2) eps) the profile is affine in
    e^{eps_g}, so eps_g = log((A_m - delta~ (1+e^eps)^k) / B_m) with
    A_m = sum_{i<m} C(k,i) e^{(k-i) eps}, B_m = sum_{i<m} C(k,i) e^{i eps},
    delta~ = 1 - (1 - delta) / (1 - delta0)^k (composition.md Theorem 1).
    Assumptions: as :func:`optimal_dp_delta`.
    Guarantee: the exact optimum; the closed form is re-checked against the
    forward formula and nudged up until ``optimal_dp_delta(result) <= target_delta``.
    ``inf`` when delta < 1 - (1 - delta0)^k (infeasible); 0 when delta >= 1.
    For k above ``WINDOW_FROM`` (issue 23): bisection on the windowed profile, the
    answer certified by it and within 1e-9 relative of the optimum (its lower
    bound is checked in tests/bounds/test_optimal_dp_large.py).
    Runtime: O(k) up to ``WINDOW_FROM``; beyond, O(sqrt k) (k = 10^9 in < 0.5 s CPU).
    """
    k = check_count("k", k)
    eps = check_nonnegative("epsilon", epsilon)
    target = check_probability("target_delta", target_delta)
    d0 = check_probability("delta0", delta0)
    if target >= 1:
        return 0.0
    log_keep = k * math.log1p(-d0) if d0 < 1 else -math.inf
    # 1 - (1 - delta) / (1 - delta0)^k, computed without cancellation when delta0 = 0
    tilde = -math.expm1(math.log1p(-target) - log_keep) if d0 > 0 else target
    if tilde < 0:
        return math.inf
    if eps == 0:
        return 0.0

    def profile(eg: float) -> float:
        return optimal_dp_delta(k, eps, eg, delta0=d0)

    if tilde == 0:
        # delta 0 (pure events): the optimum is k eps exactly (basic composition is
        # tight at delta 0), rounded up to the next binary64 number only if inexact
        return multiple_upper(eps, k)
    if _pure_delta(k, eps, 0.0) <= tilde:
        return 0.0
    if k > WINDOW_FROM:
        return _large_k_epsilon(k, eps, target, d0)
    i = np.arange(k + 1, dtype=float)
    log_c = log_binomial(k, i)
    log_norm = _log_norm(k, eps)
    log_a = np.logaddexp.accumulate(log_c + (k - i) * eps) - log_norm   # log A_m, m = 1..k+1
    log_b = np.logaddexp.accumulate(log_c + i * eps) - log_norm
    m = np.arange(1, k + 2, dtype=float)
    low = np.maximum(0.0, (k - 2.0 * m) * eps)
    high = (k - 2.0 * m + 2.0) * eps
    log_tilde = math.log(tilde)
    feasible = log_a > log_tilde
    with np.errstate(invalid="ignore", divide="ignore"):
        log_numerator = log_a + log1mexp(np.minimum(log_tilde - log_a, 0.0))
        candidate = log_numerator - log_b
    inside = feasible & (candidate >= low - 1e-9 * np.maximum(1.0, high)) & (candidate <= high + 1e-9 * np.maximum(1.0, high))
    if not inside.any():
        # should not happen; fall back to a safe, bracketed answer
        from privloss.bounds._numeric import invert_delta
        return invert_delta(profile, target, k * eps)
    index = int(np.argmax(inside))
    result = min(max(float(candidate[index]), float(low[index])), float(high[index]))
    return certify_epsilon(profile, target, result)
