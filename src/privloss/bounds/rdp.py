"""Renyi-DP route with the exact worst-case Renyi curves of pure-DP and BR
mechanisms, composed additively and converted with the tight RDP -> DP
conversion. This bound is ours (derived), built from published pieces:

* every epsilon-DP pair is a post-processing of RR_{2 eps, eps} [KOV] and every
  epsilon-BR pair with parameter t of RR_{eps, t} ([DDR], composition.md Def. 2.4),
  so by data processing their Renyi divergences are bounded by those of the
  two-point pairs; for BR we take the supremum over t in closed form
  (``br_renyi``; E_P[e^{(a-1)L}] = s^c (A q(s) + B) is log-concave in s = e^t);
* Renyi divergences add under adaptive composition [Mironov 2017, Prop. 1];
  the sum over a preregistered set does not depend on the order, so the bound
  also holds set-wise;
* the conversion delta <= e^{(a-1)(R(a) - eps)} / a (1 - 1/a)^{a-1} holds for
  every order a > 1 [Balle et al. 2020; CKS Prop. 12], so minimising over a
  numerically can only lose tightness, never validity.
"""

from __future__ import annotations

import math
import numpy as np
from scipy.optimize import minimize_scalar

from privloss.bounds._numeric import (check_nonnegative, check_probability, log_sigmoid,
                                      round_up, safe_delta)


def dp_renyi(epsilon: float, alpha: float) -> float:
    """sup over epsilon-DP pairs of D_alpha = D_alpha(RR_{2eps,eps}), exact."""
    if epsilon == 0:
        return 0.0
    la, lb = log_sigmoid(epsilon), log_sigmoid(-epsilon)
    c = alpha - 1.0
    value = float(np.logaddexp(alpha * la - c * lb, alpha * lb - c * la)) / c
    return min(max(value, 0.0), epsilon)


def br_renyi(epsilon: float, alpha: float) -> float:
    """sup over epsilon-BR pairs of D_alpha = sup_t D_alpha(RR_{eps,t}), exact.

    With c = a - 1, s = e^t: E_P[e^{cL}] = s^c (A q(s) + B), A = 1 - e^{-c eps},
    B = e^{-c eps}, q(s) = (1 - s e^{-eps}) / (1 - e^{-eps}); it is log-concave in
    s with maximiser s* = c e^eps (A + B D) / ((c + 1) A), D = 1 - e^{-eps},
    clamped to [1, e^eps].
    """
    if epsilon == 0:
        return 0.0
    c = alpha - 1.0
    big_a = -math.expm1(-c * epsilon)
    big_b = math.exp(-c * epsilon)
    big_d = -math.expm1(-epsilon)
    # u = eps - t, computed without forming eps + w - eps: for eps ~ 1e16 and above,
    # eps + w rounds to eps, which made q = 0 and the divergence 0 (optimistic)
    w = math.log(c) + math.log(big_a + big_b * big_d) - math.log(c + 1.0) - math.log(big_a)
    u = min(max(-w, 0.0), epsilon)
    t = epsilon - u
    q = -math.expm1(-u) / big_d
    # log(A q + B) without underflow: B = e^{-c eps} may be 0 in floating point
    log_inner = (math.log(big_a * q) + math.log1p(big_b / (big_a * q))) if q > 0 else -c * epsilon
    value = (c * t + log_inner) / c
    return min(max(value, 0.0), epsilon)


def _grouped(values) -> tuple:
    """Collapse repeated epsilons: ((epsilon, count), ...) keeps large k cheap."""
    arr = np.asarray(values if values is not None else (), dtype=float).reshape(-1)
    if arr.size and (not np.all(np.isfinite(arr)) or np.any(arr < 0)):
        raise ValueError("epsilons must be finite and >= 0")
    unique, counts = np.unique(arr, return_counts=True)
    return tuple(zip(unique.tolist(), counts.tolist()))


def _curve(dp_epsilons, br_epsilons, xi, rho):
    dp = _grouped(dp_epsilons)
    br = _grouped(br_epsilons)
    xi = check_nonnegative("xi", xi)
    rho = check_nonnegative("rho", rho)
    pure_total = math.fsum(e * n for e, n in dp) + math.fsum(e * n for e, n in br)

    def renyi(alpha: float) -> float:
        total = math.fsum(n * dp_renyi(e, alpha) for e, n in dp)
        total += math.fsum(n * br_renyi(e, alpha) for e, n in br)
        return total + xi + alpha * rho

    return renyi, pure_total, rho


def _minimise_over_orders(objective) -> float:
    """min over log(alpha - 1) in [-9, 12] of ``objective``: a coarse grid, then a
    bounded refinement around the best grid point. Any order gives a valid bound,
    so an imprecise minimum only loses tightness."""
    grid = np.linspace(-9.0, 12.0, 43)
    values = [objective(x) for x in grid]
    best_index = int(np.argmin(values))
    low = grid[max(best_index - 1, 0)]
    high = grid[min(best_index + 1, grid.size - 1)]
    result = minimize_scalar(objective, bounds=(low, high), method="bounded",
                             options={"xatol": 1e-9, "maxiter": 200})
    return min(float(result.fun), values[best_index])


def _conversion(alpha: float, renyi_value: float, log_inv_delta: float) -> float:
    return renyi_value + (log_inv_delta + (alpha - 1.0) * math.log1p(-1.0 / alpha)
                          - math.log(alpha)) / (alpha - 1.0)


def rdp_epsilon(target_delta: float, *, dp_epsilons=(), br_epsilons=(), xi: float = 0.0,
                rho: float = 0.0) -> float:
    """Epsilon at ``target_delta`` of the exact-Renyi route (see module docstring).

    Theorem: RDP composition [Mironov 2017] of the exact worst-case Renyi curves
    of epsilon-DP (RR_{2eps,eps}) and epsilon-BR (sup_t RR_{eps,t}) mechanisms plus
    (xi, rho)-zCDP terms, converted by [CKS] Prop. 12 / [Balle et al. 2020].
    Assumptions: adaptive or set-wise (hence non-adaptive) composition;
    heterogeneous.
    Guarantee: valid upper bound (each order gives a valid epsilon; we minimise
    over orders numerically); rounded up.
    Runtime: O(m log(1/tol)) for m distinct epsilons.
    """
    delta = check_probability("target_delta", target_delta)
    renyi, pure_total, rho = _curve(dp_epsilons, br_epsilons, xi, rho)
    if delta >= 1:
        return 0.0
    if pure_total == 0 and rho == 0:
        return round_up(renyi(2.0))      # a constant curve xi: (xi, 0)-zCDP is xi-DP
    if delta == 0:
        return math.inf
    log_inv = -math.log(delta)

    def objective(log_a_minus_1: float) -> float:
        alpha = 1.0 + math.exp(log_a_minus_1)
        return _conversion(alpha, renyi(alpha), log_inv)

    best = _minimise_over_orders(objective)
    return round_up(max(best, 0.0))


def rdp_delta(epsilon_g: float, *, dp_epsilons=(), br_epsilons=(), xi: float = 0.0,
              rho: float = 0.0) -> float:
    """Delta at ``epsilon_g`` of the exact-Renyi route: inf over orders a of
    e^{(a-1)(R(a) - eps_g)} / a (1 - 1/a)^{a-1}. Theorem, assumptions, guarantee:
    as :func:`rdp_epsilon` (clipped at 1). Runtime: as :func:`rdp_epsilon`.
    """
    eg = check_nonnegative("epsilon_g", epsilon_g, allow_inf=True)
    renyi, pure_total, rho = _curve(dp_epsilons, br_epsilons, xi, rho)
    if math.isinf(eg):
        return 0.0

    def log_delta(log_a_minus_1: float) -> float:
        alpha = 1.0 + math.exp(log_a_minus_1)
        return ((alpha - 1.0) * (renyi(alpha) - eg) - math.log(alpha)
                + (alpha - 1.0) * math.log1p(-1.0 / alpha))

    best = _minimise_over_orders(log_delta)
    return 1.0 if best >= 0 else safe_delta(math.exp(best))
