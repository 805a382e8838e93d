"""Optimal homogeneous composition of (epsilon, delta0)-DP mechanisms
([CR] Theorem 1 = [KOV] Theorem 3.3 in Murtagh–Vadhan's form).

The worst case of k adaptively chosen (epsilon, delta0)-DP mechanisms is k
copies of randomized response, so the optimal delta is a binomial sum; between
lattice points (k - 2i) epsilon it is affine in e^{epsilon_g}, which gives the
exact, root-free inversion used by :func:`optimal_dp_epsilon`.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import gammaln, logsumexp

from privloss.bounds._numeric import (certify_epsilon, check_count, check_nonnegative,
                                      check_probability, log1mexp, log_binomial, round_up,
                                      safe_delta)


def _log_norm(k: int, epsilon: float) -> float:
    """log (1 + e^epsilon)^k."""
    return k * float(np.logaddexp(0.0, epsilon))


def _pure_delta(k: int, epsilon: float, epsilon_g: float) -> float:
    """(1+e^eps)^-k sum_i C(k,i) [e^{(k-i) eps} - e^{eps_g + i eps}]_+, in log space."""
    if epsilon == 0 or epsilon_g >= k * epsilon:
        return 0.0
    # active terms: (k - i) eps > eps_g + i eps  <=>  i < (k eps - eps_g) / (2 eps)
    last = math.ceil((k * epsilon - epsilon_g) / (2.0 * epsilon)) - 1
    last = min(max(last, -1), k)
    if last < 0:
        return 0.0
    i = np.arange(last + 1, dtype=float)
    exponent = epsilon_g + (2.0 * i - k) * epsilon          # log of the ratio, < 0
    exponent = np.minimum(exponent, 0.0)
    log_terms = log_binomial(k, i) + (k - i) * epsilon + log1mexp(exponent)
    value = float(np.exp(logsumexp(log_terms) - _log_norm(k, epsilon)))
    # gammaln and the large exponents carry an absolute log error of a few ulps of
    # their magnitude (~1e-10 at k = 1e5): widen the outward rounding to match.
    magnitude = float(gammaln(k + 1.0)) + k * epsilon + _log_norm(k, epsilon)
    return round_up(value, relative=1e-12 + 16 * 2.220446049250313e-16 * magnitude)


def optimal_dp_delta(k: int, epsilon: float, epsilon_g: float, *, delta0: float = 0.0) -> float:
    """Optimal delta of k-fold composition of (epsilon, delta0)-DP at ``epsilon_g``.

    Theorem: [CR] Theorem 1 = [KOV] Theorem 3.3, Murtagh–Vadhan homogeneous form:
    delta = 1 - (1 - delta0)^k (1 - (1+e^eps)^-k sum_i C(k,i) [e^{(k-i)eps} - e^{eps_g + i eps}]_+).
    Assumptions: adaptive composition (also covers non-adaptive and set-wise:
    all parameters equal), homogeneous epsilon and delta0.
    Guarantee: the exact optimum, rounded up by a relative 1e-12; clipped to [0, 1].
    Runtime: O(k) in log space (no overflow for k up to 1e5, epsilon up to 20).
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
    Runtime: O(k).
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
        return certify_epsilon(profile, target, round_up(k * eps))
    if _pure_delta(k, eps, 0.0) <= tilde:
        return 0.0
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
