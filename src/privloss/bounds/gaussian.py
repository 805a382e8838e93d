"""Gaussian and Laplace noise for histograms ([CR] Section 6: Lemmas 6.1-6.3)."""

from __future__ import annotations

import math

from scipy.special import log_ndtr

from privloss.bounds._numeric import (check_count, check_nonnegative,
                                      check_positive, check_probability, invert_delta,
                                      log1mexp, safe_delta)
from privloss.bounds.optimal_dp import optimal_dp_epsilon
from privloss.bounds.zcdp import zcdp_epsilon_simple, zcdp_epsilon_tight


def _analytic_delta(sigma: float, epsilon: float, sensitivity: float) -> float:
    a = sensitivity / (2.0 * sigma) - epsilon * sigma / sensitivity
    b = -sensitivity / (2.0 * sigma) - epsilon * sigma / sensitivity
    log_pa = float(log_ndtr(a))
    log_pb = float(log_ndtr(b)) + epsilon
    # The difference of two nearly equal Phi values loses absolute accuracy of a
    # few ulps of Phi(a); add that much so a tiny delta is never understated.
    cancellation = 8.0 * 2.220446049250313e-16 * math.exp(log_pa)
    if log_pb >= log_pa:
        return cancellation
    return math.exp(log_pa + float(log1mexp(log_pb - log_pa))) + cancellation


def analytic_gaussian_delta(sigma: float, epsilon: float, *, sensitivity: float = 1.0) -> float:
    """Exact delta of the Gaussian mechanism at ``epsilon``.

    Theorem: [CR] Lemma 6.1 = Balle–Wang 2018, Theorem 8: f(x) + N(0, sigma^2 I)
    with l2-sensitivity Delta is (eps, delta)-DP iff
    Phi(Delta/(2 sigma) - eps sigma/Delta) - e^eps Phi(-Delta/(2 sigma) - eps sigma/Delta) <= delta.
    Assumptions: one Gaussian release (vector-valued allowed), l2 sensitivity.
    Guarantee: the exact value, computed in log space (log_ndtr), rounded up.
    Runtime: O(1).
    """
    sigma = check_positive("sigma", sigma)
    eps = check_nonnegative("epsilon", epsilon, allow_inf=True)
    sensitivity = check_positive("sensitivity", sensitivity)
    if math.isinf(eps):
        return 0.0
    return safe_delta(_analytic_delta(sigma, eps, sensitivity))


def analytic_gaussian_epsilon(sigma: float, target_delta: float, *, sensitivity: float = 1.0) -> float:
    """Smallest epsilon of the Gaussian mechanism at ``target_delta`` ([CR] Lemma 6.1).

    Guarantee: bracketed bisection on the exact, decreasing profile; the result
    re-checks: ``analytic_gaussian_delta(sigma, result) <= target_delta``;
    ``inf`` at delta = 0. Runtime: O(log(1/tol)).
    """
    sigma = check_positive("sigma", sigma)
    delta = check_probability("target_delta", target_delta)
    sensitivity = check_positive("sensitivity", sensitivity)
    if delta >= 1:
        return 0.0
    if delta == 0:
        return math.inf
    mu = sensitivity / sigma
    upper = mu * mu / 2.0 + mu * math.sqrt(2.0 * -math.log(delta)) + 1.0
    return invert_delta(lambda e: analytic_gaussian_delta(sigma, e, sensitivity=sensitivity),
                        delta, upper)


def analytic_gaussian_sigma(epsilon: float, target_delta: float, *, sensitivity: float = 1.0,
                            tolerance: float = 1e-12) -> float:
    """Smallest sigma for which the Gaussian mechanism is (epsilon, delta)-DP.

    Theorem: [CR] Lemma 6.1 (Balle–Wang's condition is necessary and sufficient).
    Assumptions: l2-sensitivity ``sensitivity``; 0 < delta < 1; epsilon >= 0
    (epsilon = 0 is allowed: delta(0) = 2 Phi(Delta/(2 sigma)) - 1).
    Guarantee: bisection on the strictly decreasing sigma -> delta(sigma); the
    returned sigma is the upper end of the final bracket, so it meets the target
    (re-checked), within a relative ``tolerance`` of the optimum.
    Runtime: O(log(1/tol)).
    """
    eps = check_nonnegative("epsilon", epsilon)
    delta = check_probability("target_delta", target_delta, open_lower=True, closed_upper=False)
    sensitivity = check_positive("sensitivity", sensitivity)

    def meets(sigma: float) -> bool:
        return _analytic_delta(sigma, eps, sensitivity) <= delta

    high = sensitivity
    while not meets(high):
        high *= 2.0
    low = high / 2.0
    while meets(low) and low > 1e-300:
        high, low = low, low / 2.0
    while high - low > tolerance * high:
        mid = 0.5 * (low + high)
        if meets(mid):
            high = mid
        else:
            low = mid
    # safe_delta's rounding is applied when delta is reported; re-check with it
    while safe_delta(_analytic_delta(high, eps, sensitivity)) > delta:
        high *= 1.0 + 1e-12
    return high


def classical_gaussian_sigma(epsilon: float, target_delta: float, *, sensitivity: float = 1.0) -> float:
    """sigma = Delta sqrt(2 log(1.25/delta)) / epsilon [Dwork–Roth 2014, Thm A.1].

    Assumptions: 0 < epsilon < 1 (the theorem is false beyond), 0 < delta < 1.
    Guarantee: valid for epsilon < 1; always at least the analytic sigma.
    Runtime: O(1).
    """
    eps = check_positive("epsilon", epsilon)
    if eps >= 1:
        raise ValueError(f"epsilon must be in (0, 1) for the classical Gaussian mechanism, got {epsilon!r}")
    delta = check_probability("target_delta", target_delta, open_lower=True, closed_upper=False)
    sensitivity = check_positive("sensitivity", sensitivity)
    return sensitivity * math.sqrt(2.0 * math.log(1.25 / delta)) / eps


def laplace_histogram_epsilon(l0_sensitivity: int, linf_sensitivity: float, scale: float,
                              target_delta: float) -> float:
    """Epsilon of Laplace noise Lap(scale) on every count of a histogram.

    Theorem: [CR] Lemma 6.2 (reconstructed, composition.md §5): with at most
    Delta_0 counts changing by at most Delta_inf, each changed count is an
    (Delta_inf/scale)-DP Laplace release, so the histogram is
    eps_opt(M_DP(Delta_inf/scale)^{Delta_0}, delta) by [CR] Theorem 1.
    Assumptions: l0 / linf sensitivities as stated; add/remove neighbours.
    Guarantee: valid upper bound (Theorem 1 is exact for the worst case).
    Runtime: O(Delta_0).
    """
    l0 = check_count("l0_sensitivity", l0_sensitivity)
    linf = check_positive("linf_sensitivity", linf_sensitivity)
    scale = check_positive("scale", scale)
    delta = check_probability("target_delta", target_delta)
    return optimal_dp_epsilon(l0, linf / scale, delta)


def gaussian_histogram_rho(l0_sensitivity: int, linf_sensitivity: float, sigma: float) -> float:
    """rho = Delta_0 Delta_inf^2 / (2 sigma^2): zCDP of Gaussian noise on a histogram
    ([CR] Lemma 6.3)."""
    l0 = check_count("l0_sensitivity", l0_sensitivity)
    linf = check_positive("linf_sensitivity", linf_sensitivity)
    sigma = check_positive("sigma", sigma)
    return l0 * linf * linf / (2.0 * sigma * sigma)


def gaussian_histogram_epsilon(l0_sensitivity: int, linf_sensitivity: float, sigma: float,
                               target_delta: float, *, conversion: str = "tight") -> float:
    """Epsilon of Gaussian noise N(0, sigma^2) on every count, via zCDP.

    Theorem: [CR] Lemma 6.3 (reconstructed): rho = Delta_0 Delta_inf^2 / (2 sigma^2)
    then rho + 2 sqrt(rho log(1/delta)) ("simple", [BS16] Prop 1.3), or the [CKS]
    tight conversion ("tight", the optimised form the seed alludes to).
    Assumptions: l0 / linf sensitivities; add/remove neighbours.
    Guarantee: valid upper bound. (The exact analytic Gaussian with
    Delta_2 = sqrt(Delta_0) Delta_inf, :func:`analytic_gaussian_epsilon`, is tighter.)
    Runtime: O(1).
    """
    rho = gaussian_histogram_rho(l0_sensitivity, linf_sensitivity, sigma)
    if conversion == "simple":
        return zcdp_epsilon_simple(rho, target_delta)
    if conversion == "tight":
        return zcdp_epsilon_tight(rho, target_delta)
    raise ValueError(f"conversion must be 'simple' or 'tight', got {conversion!r}")


def gaussian_histogram_sigma_simple(l0_sensitivity: int, linf_sensitivity: float, epsilon: float,
                                    target_delta: float) -> float:
    """sigma meeting (epsilon, delta) through Lemma 6.3 with the simple conversion:
    sqrt(rho) = sqrt(log(1/delta) + eps) - sqrt(log(1/delta)), sigma = Delta_inf sqrt(Delta_0/(2 rho)).

    Guarantee: re-checked (sigma nudged up until the forward epsilon meets the target).
    """
    l0 = check_count("l0_sensitivity", l0_sensitivity)
    linf = check_positive("linf_sensitivity", linf_sensitivity)
    eps = check_positive("epsilon", epsilon)
    delta = check_probability("target_delta", target_delta, open_lower=True, closed_upper=False)
    log_inv = -math.log(delta)
    root_rho = eps / (math.sqrt(log_inv + eps) + math.sqrt(log_inv))
    sigma = linf * math.sqrt(l0 / 2.0) / root_rho
    while gaussian_histogram_epsilon(l0, linf, sigma, delta, conversion="simple") > eps:
        sigma *= 1.0 + 1e-12
    return sigma


__all__ = [
    "analytic_gaussian_delta", "analytic_gaussian_epsilon", "analytic_gaussian_sigma",
    "classical_gaussian_sigma", "laplace_histogram_epsilon", "gaussian_histogram_rho",
    "gaussian_histogram_epsilon", "gaussian_histogram_sigma_simple"
]
