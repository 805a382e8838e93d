"""Zero-concentrated DP: composition, conversions from DP/BR/CDP, and the
simple and tight conversions to (epsilon, delta)-DP (composition.md §1, §7.4)."""

from __future__ import annotations

import math

from privloss.bounds._numeric import (check_epsilon_list, check_nonnegative, check_probability,
                                      round_up, safe_delta)


def zcdp_from_pure_dp(epsilon: float) -> float:
    """rho = epsilon^2 / 2: epsilon-DP implies rho-zCDP [BS16 Prop. 1.4]."""
    eps = check_nonnegative("epsilon", epsilon)
    return round_up(eps * eps / 2.0)


def zcdp_from_bounded_range(epsilon: float) -> float:
    """rho = epsilon^2 / 8: epsilon-BR implies rho-zCDP [CR] Section 3 (via Lemma 2.2
    and mu_BR <= epsilon^2/8)."""
    eps = check_nonnegative("epsilon", epsilon)
    return round_up(eps * eps / 8.0)


def zcdp_from_cdp(mu: float, tau: float) -> tuple[float, float]:
    """(xi, rho) = (mu - tau^2/2, tau^2/2): (mu, tau)-CDP implies zCDP [BS16], [CR] Lemma 2.2.

    xi may be negative (then the Renyi bound xi + rho alpha is still valid, it is
    only stronger than rho-zCDP); callers that need xi >= 0 clip it at 0.
    """
    mu = check_nonnegative("mu", mu)
    tau = check_nonnegative("tau", tau)
    rho = tau * tau / 2.0
    return mu - rho, round_up(rho)


def compose_zcdp(rhos, *, xis=None) -> tuple[float, float]:
    """(sum xi_i, sum rho_i): adaptive (and set-wise) composition of zCDP [BS16 Lemma 2.3]."""
    rho = check_epsilon_list("rhos", rhos)
    xi = 0.0 if xis is None else math.fsum(check_epsilon_list("xis", xis))
    return round_up(xi), round_up(math.fsum(rho))


def _increasing_root(function, low: float, high: float, *, tolerance: float) -> float:
    """A point within ``tolerance * (1 + |x|)`` of the root of an increasing ``function``
    with function(low) < 0 <= function(high), by bisection. Replaces scipy.optimize
    (~0.1 s of CLI start-up, issue 12 item 8): the orders below are roots of monotone
    functions, and any order gives a valid bound, so precision only buys tightness."""
    while high - low > tolerance * (1.0 + abs(low)):
        middle = 0.5 * (low + high)
        if not low < middle < high:       # float resolution reached
            break
        if function(middle) < 0:
            low = middle
        else:
            high = middle
    return 0.5 * (low + high)


def _epsilon_prologue(rho, xi, target_delta):
    """Validate; return (rho, xi, delta, answer) with ``answer`` set in degenerate cases:
    rho = 0 -> xi; delta = 0 -> inf; delta >= 1 -> 0."""
    rho = check_nonnegative("rho", rho)
    xi = check_nonnegative("xi", xi)
    delta = check_probability("target_delta", target_delta)
    if rho == 0:
        return rho, xi, delta, round_up(xi)
    if delta == 0:
        return rho, xi, delta, math.inf
    if delta >= 1:
        return rho, xi, delta, 0.0
    return rho, xi, delta, None


def zcdp_epsilon_simple(rho: float, target_delta: float, *, xi: float = 0.0) -> float:
    """epsilon = xi + rho + 2 sqrt(rho log(1/delta)).

    Theorem: [BS16] Proposition 1.3 ([CR] Lemma 2.3).
    Assumptions: (xi, rho)-zCDP (any composition that yields it).
    Guarantee: valid upper bound; ``inf`` at delta = 0 unless rho = 0.
    Runtime: O(1).
    """
    rho, xi, delta, degenerate = _epsilon_prologue(rho, xi, target_delta)
    if degenerate is not None:
        return degenerate
    return round_up(xi + rho + 2.0 * math.sqrt(rho * -math.log(delta)))


def zcdp_delta_simple(rho: float, epsilon: float, *, xi: float = 0.0) -> float:
    """delta = exp(-(epsilon - xi - rho)^2 / (4 rho)) for epsilon >= xi + rho, else 1.

    Theorem: inverse of [BS16] Prop. 1.3. Guarantee: valid upper bound. Runtime: O(1).
    """
    rho = check_nonnegative("rho", rho)
    xi = check_nonnegative("xi", xi)
    eps = check_nonnegative("epsilon", epsilon, allow_inf=True)
    if rho == 0:
        return 0.0 if eps >= xi else 1.0
    if eps <= xi + rho:
        return 1.0
    if math.isinf(eps):
        return 0.0
    return safe_delta(math.exp(-((eps - xi - rho) ** 2) / (4.0 * rho)))


def _log_delta_at_order(alpha: float, rho: float, epsilon: float, xi: float) -> float:
    """log of exp((a-1)(xi + a rho - eps)) / a * (1 - 1/a)^(a-1); valid for every a > 1."""
    return ((alpha - 1.0) * (xi + alpha * rho - epsilon) - math.log(alpha)
            + (alpha - 1.0) * math.log1p(-1.0 / alpha))


def zcdp_delta_tight(rho: float, epsilon: float, *, xi: float = 0.0) -> float:
    """Tight conversion of (xi, rho)-zCDP to delta at ``epsilon``.

    Theorem: [CKS] Proposition 12 / Corollary 13 (= the per-order RDP->DP
    conversion of Balle et al. 2020): delta = inf_{a>1} e^{(a-1)(xi + a rho - eps)}
    / a * (1 - 1/a)^{a-1}.
    Assumptions: (xi, rho)-zCDP.
    Guarantee: every order a gives a valid bound, so the value at the numerically
    optimal a (root of xi + (2a-1) rho - eps + log(1 - 1/a) = 0) is valid even if a
    is slightly off; rounded up, clipped at 1.
    Runtime: O(log(1/tol)) bisection.
    """
    rho = check_nonnegative("rho", rho)
    xi = check_nonnegative("xi", xi)
    eps = check_nonnegative("epsilon", epsilon, allow_inf=True)
    if rho == 0:
        return 0.0 if eps >= xi else 1.0
    if math.isinf(eps):
        return 0.0
    def slope(alpha: float) -> float:
        return xi + (2.0 * alpha - 1.0) * rho - eps + math.log1p(-1.0 / alpha)

    low, high = 1.0 + 1e-12, max(2.0, (eps - xi + 1.0) / (2.0 * rho) + 2.0)
    if slope(low) >= 0:
        alpha = low
    else:
        while slope(high) < 0:
            high *= 2.0
        alpha = _increasing_root(slope, low, high, tolerance=1e-14)
    log_delta = _log_delta_at_order(alpha, rho, eps, xi)
    return 1.0 if log_delta >= 0 else safe_delta(math.exp(log_delta))


def _epsilon_at_order(alpha: float, rho: float, log_inv_delta: float, xi: float) -> float:
    return xi + alpha * rho + (log_inv_delta + (alpha - 1.0) * math.log1p(-1.0 / alpha)
                               - math.log(alpha)) / (alpha - 1.0)


def zcdp_epsilon_tight(rho: float, target_delta: float, *, xi: float = 0.0) -> float:
    """Tight conversion of (xi, rho)-zCDP to epsilon at ``target_delta``.

    Theorem: [CKS] Corollary 13 in epsilon form: eps = inf_{a>1} [xi + a rho +
    (log(1/delta) + (a-1) log(1 - 1/a) - log a) / (a - 1)].
    Assumptions: (xi, rho)-zCDP.
    Guarantee: the objective at any a > 1 is a valid epsilon, so its value at the
    numerically optimal order is valid (near-optimal); rounded up; never above the
    simple conversion. The objective's derivative in a is rho - (log(1/delta) -
    log a) / (a-1)^2, whose sign is that of the increasing rho (a-1)^2 + log a -
    log(1/delta): the objective is unimodal and its minimiser is that root, found
    by bisection over log(a - 1).
    Runtime: O(1) (about 60 evaluations).
    """
    rho, xi, delta, degenerate = _epsilon_prologue(rho, xi, target_delta)
    if degenerate is not None:
        return degenerate
    log_inv = -math.log(delta)

    def slope_sign(log_a_minus_1: float) -> float:
        a_minus_1 = math.exp(log_a_minus_1)
        return rho * a_minus_1 * a_minus_1 + math.log1p(a_minus_1) - log_inv

    def objective(log_a_minus_1: float) -> float:
        alpha = 1.0 + math.exp(log_a_minus_1)
        if alpha <= 1.0:   # a - 1 below float resolution (huge rho): no valid order here
            return math.inf
        return _epsilon_at_order(alpha, rho, log_inv, xi)

    # the optimum is near a = 1 + sqrt(log(1/delta) / rho); search a wide bracket around it
    centre = 0.5 * math.log(max(log_inv / rho, 1e-300))
    low, high = centre - 12.0, centre + 12.0
    if slope_sign(low) >= 0:
        optimum = low
    elif slope_sign(high) <= 0:
        optimum = high
    else:
        optimum = _increasing_root(slope_sign, low, high, tolerance=1e-12)
    best = min(objective(optimum), objective(centre))
    simple = xi + rho + 2.0 * math.sqrt(rho * log_inv)
    return round_up(max(xi, min(best, simple)))


def zcdp_rho_for(epsilon: float, target_delta: float, *, tolerance: float = 1e-12) -> float:
    """Largest rho whose tight conversion meets (epsilon, delta) (bisection).

    Guarantee: ``zcdp_delta_tight(result, epsilon) <= target_delta`` (re-checked:
    the bisection keeps the invariant on the low end and returns it).
    Runtime: O(log(1/tol)) tight conversions.
    """
    eps = check_nonnegative("epsilon", epsilon)
    delta = check_probability("target_delta", target_delta)
    if delta >= 1:
        return math.inf
    if delta == 0 or eps == 0:
        return 0.0
    low, high = 0.0, eps + 1.0
    while zcdp_delta_tight(high, eps) <= delta:
        high *= 2.0
    while high - low > tolerance * max(high, 1e-300):
        mid = 0.5 * (low + high)
        if zcdp_delta_tight(mid, eps) <= delta:
            low = mid
        else:
            high = mid
    return low
