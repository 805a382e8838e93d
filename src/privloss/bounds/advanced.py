"""Advanced composition: Dwork–Rothblum–Vadhan 2010 and Kairouz–Oh–Viswanath's
heterogeneous analytic bound (composition.md §7.2)."""

from __future__ import annotations

import math

import numpy as np

from privloss.bounds._numeric import (check_count, check_epsilon_list, check_nonnegative, exact_sum,
                                      check_probability, round_up, safe_delta)
from privloss.bounds.basic import _deltas_like


def _drv_mean(k: int, epsilon: float) -> float:
    return k * epsilon * math.expm1(epsilon)


def drv_epsilon(k: int, epsilon: float, target_delta: float, *, delta0: float = 0.0) -> float:
    """Epsilon of the DRV10 advanced composition theorem.

    Theorem: [DRV10] Theorem III.3: for any delta' > 0, k-fold adaptive
    composition of (epsilon, delta0)-DP is (epsilon', k delta0 + delta')-DP with
    epsilon' = sqrt(2 k log(1/delta')) epsilon + k epsilon (e^epsilon - 1).
    Assumptions: adaptive, homogeneous (every mechanism the same (epsilon, delta0)).
    Guarantee: valid upper bound with delta' = target_delta - k delta0; ``inf``
    if that is not positive. Not capped at k epsilon (basic composition is a
    separate bound).
    Runtime: O(1).
    """
    k = check_count("k", k)
    eps = check_nonnegative("epsilon", epsilon)
    target = check_probability("target_delta", target_delta)
    d0 = check_probability("delta0", delta0)
    if eps == 0:
        return 0.0 if k * d0 <= target else math.inf
    slack = target - k * d0
    if slack <= 0:
        return math.inf
    if slack >= 1:
        return 0.0
    return round_up(math.sqrt(2.0 * k * -math.log(slack)) * eps + _drv_mean(k, eps))


def drv_delta(k: int, epsilon: float, epsilon_g: float, *, delta0: float = 0.0) -> float:
    """Delta of the DRV10 theorem at ``epsilon_g`` (the inverse of :func:`drv_epsilon`).

    Theorem, assumptions: as :func:`drv_epsilon`. Guarantee: valid upper bound,
    clipped to [0, 1]. Runtime: O(1).
    """
    k = check_count("k", k)
    eps = check_nonnegative("epsilon", epsilon)
    eg = check_nonnegative("epsilon_g", epsilon_g, allow_inf=True)
    d0 = check_probability("delta0", delta0)
    if eps == 0:
        return safe_delta(k * d0)
    excess = eg - _drv_mean(k, eps)
    if excess <= 0:
        return 1.0
    if math.isinf(excess):
        return safe_delta(k * d0)
    return safe_delta(k * d0 + math.exp(-(excess / eps) ** 2 / (2.0 * k)))


def _kov_terms(eps: np.ndarray) -> tuple[float, float, float]:
    total = exact_sum(eps)
    mean = exact_sum(eps * np.tanh(eps / 2.0))
    with np.errstate(over="ignore"):    # epsilon ~ 1e154+: the square is inf, a safe value
        square = exact_sum(eps * eps)
    return total, mean, square


def _tilde_delta(target: float, dels: np.ndarray) -> float:
    """delta~ with 1 - (1 - delta~) prod(1 - delta_i) = target."""
    log_keep = exact_sum(np.log1p(-dels)) if dels.size else 0.0
    if target >= 1:
        return 1.0
    # expm1/log1p: 1 - (1 - target) would lose ~1e-8 relative at target = 1e-10
    return -math.expm1(math.log1p(-target) - log_keep)


def kov_epsilon(epsilons, target_delta: float, *, deltas=None) -> float:
    """Epsilon of KOV's heterogeneous advanced composition (minimum of its terms).

    Theorem: [KOV] Theorem 3.5 (composition.md §7.2): for delta~ in (0, 1],
    the composition of (epsilon_i, delta_i)-DP mechanisms is
    (epsilon~, 1 - (1 - delta~) prod(1 - delta_i))-DP with epsilon~ the minimum of
    sum eps_i, sum eps_i tanh(eps_i/2) + sqrt(2 sum eps_i^2 log(e + sqrt(sum eps_i^2)/delta~))
    and sum eps_i tanh(eps_i/2) + sqrt(2 sum eps_i^2 log(1/delta~)).
    Assumptions: adaptive, heterogeneous (epsilon_i, delta_i).
    Guarantee: valid upper bound; ``inf`` if the deltas alone exceed the target.
    Runtime: O(k).
    """
    eps = check_epsilon_list("epsilons", epsilons)
    target = check_probability("target_delta", target_delta)
    dels = _deltas_like(deltas, eps)
    tilde = _tilde_delta(target, dels)
    total, mean, square = _kov_terms(eps)
    if tilde < 0:
        return math.inf
    if square == 0:
        return 0.0
    if tilde == 0:
        return round_up(total)
    tilde = min(tilde, 1.0)
    second = mean + math.sqrt(2.0 * square * math.log(math.e + math.sqrt(square) / tilde))
    third = mean + math.sqrt(2.0 * square * -math.log(tilde))
    return round_up(min(total, second, third))


def kov_delta(epsilons, epsilon_g: float, *, deltas=None) -> float:
    """Delta of KOV Theorem 3.5 at ``epsilon_g``: the smallest delta~ for which
    one of its three terms is at most ``epsilon_g``, mapped through the deltas_i.

    Theorem, assumptions: as :func:`kov_epsilon`. Guarantee: valid upper bound,
    clipped to [0, 1]. Runtime: O(k).
    """
    eps = check_epsilon_list("epsilons", epsilons)
    eg = check_nonnegative("epsilon_g", epsilon_g, allow_inf=True)
    dels = _deltas_like(deltas, eps)
    total, mean, square = _kov_terms(eps)
    if eg >= round_up(total):
        tilde = 0.0
    elif eg <= mean:
        tilde = 1.0
    else:
        r2 = (eg - mean) ** 2 / (2.0 * square)
        third = math.exp(-r2)
        # log(e + s / tilde) = r2  <=>  tilde = s / (e^{r2} - e), when e^{r2} > e
        second = math.sqrt(square) / math.expm1(r2 - 1.0) / math.e if r2 > 1.0 else 1.0
        tilde = min(1.0, third, second)
    log_keep = math.fsum(np.log1p(-dels)) if dels.size else 0.0
    if tilde >= 1:
        return 1.0
    return safe_delta(-math.expm1(math.log1p(-tilde) + log_keep))
