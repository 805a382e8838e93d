"""Calibration: the largest per-mechanism epsilon, or the smallest Gaussian
sigma, that meets a target (epsilon, delta). Every answer is re-checked."""

from __future__ import annotations

import math
from dataclasses import dataclass

from privloss.accounting.accountant import AccountingResult, epsilon_of_profile
from privloss.accounting.candidates import CANDIDATES, Candidate
from privloss.accounting.profile import Profile, flatten
from privloss.bounds._numeric import check_count, check_nonnegative, check_positive, check_probability
from privloss.bounds.gaussian import analytic_gaussian_delta, analytic_gaussian_sigma
from privloss.events import BoundedRange, Interaction, PureDP

#: relative width at which the per-mechanism epsilon search stops
CALIBRATION_TOLERANCE = 1e-9
#: the orders calibrate_epsilon can be asked to hold for
ORDERS = ("any", "dp-first", "br-first")
#: bounds whose value depends on the order of the mechanisms under adaptive
#: composition ([CR] Lemma 5.1: DP then BR and BR then DP differ); every other
#: bound is a function of the multiset of parameters (or, for Corollary 5.1, does
#: not depend on the position of its single BR)
ORDER_DEPENDENT_BOUNDS = frozenset({"adaptive-sequence"})


@dataclass(frozen=True)
class Calibration:
    """Result of :func:`calibrate_epsilon`: the per-mechanism epsilon and the
    accountant's re-check of the whole composition at that value."""

    per_mechanism_epsilon: float
    check: AccountingResult
    #: the order the guarantee holds for: "any", "dp-first" or "br-first"
    order: str = "any"


def _profile(num_dp: int, num_br: int, epsilon: float, order: str = "dp-first") -> Profile:
    events = []
    if num_dp:
        events.append(PureDP(epsilon, count=num_dp))
    if num_br:
        events.append(BoundedRange(epsilon, count=num_br))
    if order == "br-first":
        events.reverse()
    return Profile(flatten(events))


def _order_free(candidates: tuple[Candidate, ...], num_dp: int, num_br: int,
                interaction: Interaction) -> tuple[Candidate, ...]:
    """The candidates whose answer holds for every order of the DP and BR mechanisms.

    Only adaptive composition of both kinds depends on the order: non-adaptively the
    product of the pairs does not (each bound, whatever order it assumes, bounds the
    same optimum), set-wise and fully adaptive bounds assume no order.
    """
    if interaction is not Interaction.ADAPTIVE or num_dp == 0 or num_br == 0:
        return candidates
    return tuple(c for c in candidates if c.name not in ORDER_DEPENDENT_BOUNDS)


def calibrate_epsilon(num_dp: int, num_br: int, target_epsilon: float, target_delta: float, *,
                      interaction: Interaction | str = Interaction.ADAPTIVE,
                      order: str = "any",
                      candidates: tuple[Candidate, ...] = CANDIDATES,
                      tolerance: float = CALIBRATION_TOLERANCE) -> Calibration:
    """Largest epsilon0 such that ``num_dp`` epsilon0-DP and ``num_br``
    epsilon0-BR mechanisms compose to (target_epsilon, target_delta).

    Definition: a bracket on epsilon0 over the accountant's tightest bound,
    which is non-decreasing in epsilon0, shrunk by safeguarded regula falsi
    (:func:`_shrink_bracket`); the invariant "the low end meets the target" is
    kept, and the low end is returned.
    ``order`` says in which order the mechanisms will be spent, which matters
    for adaptive composition of DP and BR together ([CR] Lemma 5.1): ``"any"``
    (default: the guarantee holds for every order, so the order-dependent
    recursion is left out), ``"dp-first"`` (all DP, then all BR) or
    ``"br-first"``.
    Guarantee: the returned epsilon0 is re-checked by the accountant, for the
    stated order (for every order with ``"any"``), and never exceeds the
    target; it is within a relative ``tolerance`` of the largest such value
    for the accountant's bound.
    Runtime: O(log(1/tolerance)) accountant evaluations.
    """
    if isinstance(num_dp, bool) or not isinstance(num_dp, int) or num_dp < 0:
        raise ValueError(f"num_dp must be an integer >= 0, got {num_dp!r}")
    if isinstance(num_br, bool) or not isinstance(num_br, int) or num_br < 0:
        raise ValueError(f"num_br must be an integer >= 0, got {num_br!r}")
    if num_dp + num_br == 0:
        raise ValueError("num_dp + num_br must be at least 1, got 0")
    target_eps = check_nonnegative("target_epsilon", target_epsilon)
    target_del = check_probability("target_delta", target_delta, closed_upper=False)
    interaction = Interaction.parse(interaction)
    if order not in ORDERS:
        raise ValueError(f"order must be one of {', '.join(ORDERS)}, got {order!r}")
    if order == "any":
        candidates = _order_free(tuple(candidates), num_dp, num_br, interaction)

    def spent(epsilon0: float) -> AccountingResult:
        return epsilon_of_profile(_profile(num_dp, num_br, epsilon0, order), interaction,
                                  target_del, candidates)

    def excess(epsilon0: float) -> float:
        return spent(epsilon0).value - target_eps

    # epsilon0 = 0 spends nothing (never evaluated: some bounds need epsilon > 0)
    low, high, f_low = 0.0, max(target_eps, 1e-12), -target_eps
    # one mechanism alone may be allowed more than the total target (BR with delta > 0)
    for _ in range(64):
        f_high = excess(high)
        if f_high > 0:
            break
        low, high, f_low = high, high * 2.0, f_high
    else:
        return Calibration(math.inf, spent(high), order)
    low, high = _shrink_bracket(excess, low, high, tolerance, f_low, f_high)
    check = spent(low)
    if check.value > target_eps:        # cannot happen with monotone bounds; stay safe
        return Calibration(0.0, spent(0.0), order)
    return Calibration(low, check, order)


def _shrink_bracket(excess, low: float, high: float, tolerance: float, f_low: float,
                    f_high: float) -> tuple[float, float]:
    """Shrink ``[low, high]`` with ``excess(low) <= 0 < excess(high)`` (``excess``
    non-decreasing) until ``high - low <= tolerance * high``; the invariant is
    kept at every step, so the result is as safe as bisection's.

    The Illinois variant of regula falsi: each point interpolates the ends'
    excesses, and the weight of an end kept twice in a row is halved (so neither
    end sticks); the accountant's bound is smooth between switches of the best
    bound, where this needs far fewer evaluations than bisection (each can cost
    a tabulation). Safeguards: a point stays inside the bracket by 1% of its
    width, and after three steps in a row that did not shrink it by a quarter
    the next point is the midpoint. ``f_low``, ``f_high``: the ends' excesses."""
    side, slow = 0, 0
    while high - low > tolerance * max(high, 1e-300):
        width = high - low
        if slow >= 3 or not (math.isfinite(f_low) and math.isfinite(f_high)
                             and f_high > f_low):
            point, slow = 0.5 * (low + high), 0
        else:
            point = low + width * (-f_low) / (f_high - f_low)
            point = min(max(point, low + 0.01 * width), high - 0.01 * width)
        value = excess(point)
        if value <= 0:
            low, f_low = point, value
            if side < 0:
                f_high *= 0.5
            side = -1
        else:
            high, f_high = point, value
            if side > 0:
                f_low *= 0.5
            side = 1
        slow = slow + 1 if high - low > 0.75 * width else 0
    return low, high


def calibrate_gaussian_sigma(target_epsilon: float, target_delta: float, *,
                             sensitivity: float = 1.0, count: int = 1) -> float:
    """Smallest sigma such that ``count`` Gaussian mechanisms with l2-sensitivity
    ``sensitivity`` compose to (target_epsilon, target_delta).

    Definition: k adaptively composed Gaussian mechanisms are exactly as
    private as one Gaussian with sensitivity sqrt(k) Delta (Gaussian DP
    composition, Dong–Roth–Su 2019, Cor. 3.3), so this is [CR] Lemma 6.1 /
    Balle–Wang's analytic Gaussian with that sensitivity.
    Guarantee: re-checked: the exact delta at ``target_epsilon`` is at most
    ``target_delta`` (rounded up).
    Runtime: O(log(1/tol)).
    """
    k = check_count("count", count)
    sensitivity = check_positive("sensitivity", sensitivity)
    effective = sensitivity * math.sqrt(k)
    sigma = analytic_gaussian_sigma(target_epsilon, target_delta, sensitivity=effective)
    if analytic_gaussian_delta(sigma, target_epsilon, sensitivity=effective) > target_delta:
        raise ArithmeticError("calibrated sigma failed its re-check")   # never optimistic
    return sigma
