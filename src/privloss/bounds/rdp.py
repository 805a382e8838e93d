"""Renyi-DP route with the exact worst-case Renyi curves of pure-DP and BR
mechanisms, composed additively and converted with the tight RDP -> DP
conversion. This bound is ours (derived), built from published pieces:

* every epsilon-DP pair is a post-processing of RR_{2 eps, eps} [KOV] and every
  epsilon-BR pair with parameter t of RR_{eps, t} ([DDR], composition.md Def. 2.4),
  so by data processing their Renyi divergences are bounded by those of the
  two-point pairs; for BR we take the supremum over t in closed form
  (``br_renyi``);
* Renyi divergences add under adaptive composition [Mironov 2017, Prop. 1];
  the sum over a preregistered set does not depend on the order, so the bound
  also holds set-wise;
* the conversion delta <= e^{(a-1)(R(a) - eps)} / a (1 - 1/a)^{a-1} holds for
  every order a > 1 [Balle et al. 2020; CKS Prop. 12], so minimising over a
  numerically can only lose tightness, never validity.

Numerics (why the formulas look the way they do). With c = a - 1:

* DP: c D_a = log(cosh(c eps) + tanh(eps/2) sinh(c eps)), evaluated as
  log1p(2 sinh^2(c eps/2) + tanh(eps/2) sinh(c eps)) (a sum of non-negative
  terms: no cancellation as c -> 0 or eps -> 0), and
  c (D_a - eps) = log1p(-(1 - e^{-2 c eps}) / (1 + e^eps)).
* BR: with b = eps/2, a' = c b and v = t - eps/2, the maximiser is
  e^{v*} = c sinh(a'+b) / ((c+1) sinh a') and
  c D_a = c v* + log(sinh(a'+b) / ((c+1) sinh b)). Both logarithms are written
  as log1p of sums of non-negative terms built from sinh(x) - x and
  x coth(x) - 1 (evaluated by their positive power series for small x), so the
  result keeps its relative accuracy down to alpha -> 1 and tiny epsilon (the
  former form lost up to 1.6% at eps = 1e-4, alpha = 1.0001); for large c eps
  the logarithms of sinh are taken in closed form.
* Near the largest loss, the conversion needs (a-1)(R(a) - eps_g); it is
  assembled as c (sum eps_i - eps_g) (the difference taken exactly from the
  float inputs) plus the per-mechanism c (D_a - eps_i) <= 0, never by
  subtracting two nearly equal floats.
* Every evaluation carries an explicit bound on its floating-point error, which
  is added (outward) before the minimum over orders is taken.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from privloss.bounds._numeric import (check_nonnegative, check_probability, exact_rational_sum, round_up,
                                      safe_delta)

_ULP = 2.220446049250313e-16
#: above this value of c * eps / 2, the BR formulas switch to closed-form logs of sinh
_LARGE = 20.0
#: error allowance, in ulps of the magnitudes involved, of one evaluation (each
#: elementary operation contributes at most half an ulp; a few dozen are chained)
_ERROR_ULPS = 32.0


# --------------------------------------------------------------------------
# accurate elementary pieces (vectorised, x >= 0)
# --------------------------------------------------------------------------

def _odd_series(x: np.ndarray, weight) -> np.ndarray:
    """sum_{n>=1} weight(n) x^{2n+1} / (2n+1)! for 0 <= x <= 1 (positive terms, Horner)."""
    # ten terms: the next is below 1/23! ~ 4e-23 of the first (x <= 1)
    coefficients = [weight(n) / math.factorial(2 * n + 1) for n in range(1, 11)]
    square = x * x
    total = coefficients[-1]
    for coefficient in reversed(coefficients[:-1]):
        total = total * square + coefficient
    return total * square * x


def _sinh_minus_identity(x: np.ndarray) -> np.ndarray:
    """sinh(x) - x, accurate to a few ulps (series below 1: no cancellation)."""
    with np.errstate(over="ignore"):
        direct = np.sinh(x) - x
    return np.where(x < 1.0, _odd_series(np.minimum(x, 1.0), lambda n: 1.0), direct)


def _x_coth_x_minus_one(x: np.ndarray) -> np.ndarray:
    """x coth(x) - 1 = (x cosh x - sinh x) / sinh x, accurate to a few ulps; 0 at 0."""
    small = np.minimum(x, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        series = _odd_series(small, lambda n: 2.0 * n) / np.sinh(small)
        direct = x / np.tanh(x) - 1.0
    return np.where(x == 0, 0.0, np.where(x < 1.0, series, direct))


def _dp_terms(epsilon: np.ndarray, c: np.ndarray):
    """Terms of RR_{2eps,eps} at order a = 1 + c (eps > 0): (c D_a, c (D_a - eps),
    and the magnitudes whose few ulps bound the float error of each of the two).

    c D_a = log(p e^{c eps} + q e^{-c eps}) with p = e^eps/(1+e^eps), q = 1 - p.
    """
    y = c * epsilon
    q = 0.5 * (1.0 - np.tanh(0.5 * epsilon))          # 1 / (1 + e^eps), no overflow
    excess = np.minimum(np.log1p(q * np.expm1(-2.0 * y)), 0.0)     # in [log p, 0]
    with np.errstate(over="ignore", invalid="ignore"):
        capped = np.minimum(y, _LARGE)
        half = np.sinh(0.5 * capped)
        small = np.log1p(2.0 * half * half + np.tanh(0.5 * epsilon) * np.sinh(capped))
    full = np.where(y <= _LARGE, small, y + excess)
    # both are computed to a few ulps relative (sums of same-sign terms)
    return full, excess, np.abs(full), np.abs(excess)


def _br_terms(epsilon: np.ndarray, c: np.ndarray):
    """Terms of sup_t RR_{eps,t} at order a = 1 + c (eps > 0), as :func:`_dp_terms`.

    b = eps/2, a' = c b; D_a(t) = v + log(sinh(a'+b) - sinh(a') e^v)/c - log(sinh b)/c with
    v = t - b, maximised at e^{v*} = c sinh(a'+b) / ((c+1) sinh a') (interior of [-b, b]).
    """
    b = 0.5 * epsilon
    a = c * b
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        # ---- a' <= _LARGE: positive-series forms -------------------------------------
        a_small = np.minimum(a, _LARGE)
        a_coth_a_minus_one = _x_coth_x_minus_one(a_small)
        a_coth_a = 1.0 + a_coth_a_minus_one
        coth_b = 1.0 / np.tanh(b)
        # e^{v*} - 1 = [c (cosh b - 1) + (sinh b / b - 1) a coth a + (a coth a - 1)] / (1 + c)
        b_small = np.minimum(b, _LARGE)
        sinh_half_b = np.sinh(0.5 * b_small)
        n1 = (2.0 * c * sinh_half_b * sinh_half_b
              + _sinh_minus_identity(b_small) / b_small * a_coth_a + a_coth_a_minus_one) / (1.0 + c)
        v_small_b = np.log1p(n1)
        # b > _LARGE: v* = log c + log(cosh b + coth(a) sinh b) - log(1 + c), no cancellation
        tail = np.exp(-2.0 * b)
        v_large_b = (np.log(c) + b - math.log(2.0)
                     + np.log((1.0 + tail) + (1.0 - tail) * a_coth_a / a_small) - np.log1p(c))
        v_star = np.where(b <= _LARGE, v_small_b, v_large_b)
        # log(sinh(a'+b) / ((1+c) sinh b)) = log1p([2 sinh^2(a'/2) + (sinh a' - a') coth b
        #                                          + c (b coth b - 1)] / (1 + c))
        sinh_half_a = np.sinh(0.5 * a_small)
        n2 = (2.0 * sinh_half_a * sinh_half_a + _sinh_minus_identity(a_small) * coth_b
              + c * _x_coth_x_minus_one(b)) / (1.0 + c)
        full_small = c * v_star + np.log1p(n2)
        # ---- a' > _LARGE: logs of sinh in closed form ---------------------------------
        e_ab = np.exp(-2.0 * (a + b))
        e_a = np.exp(-2.0 * a)
        v_minus_b = -np.log1p(1.0 / c) + np.log1p(-e_ab) - np.log1p(-e_a)
        excess_large = (c * v_minus_b + np.log1p(-e_ab) - np.log(-np.expm1(-epsilon))
                        - np.log1p(c))
        large_scale = (np.abs(c * v_minus_b) + np.abs(np.log(-np.expm1(-epsilon)))
                       + np.log1p(c) + 2.0)
    small = a <= _LARGE
    excess = np.where(small, full_small - c * epsilon, excess_large)
    excess = np.minimum(excess, 0.0)                    # D_a <= D_inf <= eps
    full = np.where(small, np.minimum(full_small, c * epsilon), c * epsilon + excess)
    # small: c D_a is a sum of non-negative terms (relative error), its excess cancels
    # against c eps; large: the logs carry absolute errors of their own size
    full_error = np.where(small, np.abs(full), c * epsilon + large_scale)
    excess_error = np.where(small, np.abs(full) + c * epsilon, large_scale)
    return full, excess, full_error, excess_error


def _scalar(terms, epsilon: float, alpha: float) -> float:
    eps = check_nonnegative("epsilon", epsilon)
    a = float(alpha)
    if not a > 1.0 or math.isinf(a):
        raise ValueError(f"alpha must be in (1, inf), got {alpha!r}")
    if eps == 0:
        return 0.0
    c = a - 1.0
    full, _, full_error, _ = terms(np.array([[eps]]), np.array([[c]]))
    value = (float(full[0, 0]) + _ERROR_ULPS * _ULP * float(full_error[0, 0])) / c
    return min(round_up(value), eps)


def dp_renyi(epsilon: float, alpha: float) -> float:
    """sup over epsilon-DP pairs of D_alpha = D_alpha(RR_{2eps,eps}).

    Definition: D_alpha = log(p e^{c eps} + q e^{-c eps}) / c, c = alpha - 1,
    p = e^eps / (1 + e^eps), q = 1 - p [KOV worst case + data processing].
    Guarantee: an upper bound within a few ulps (outward rounding), capped at epsilon.
    Runtime: O(1).
    """
    return _scalar(_dp_terms, epsilon, alpha)


def br_renyi(epsilon: float, alpha: float) -> float:
    """sup over epsilon-BR pairs of D_alpha = sup_t D_alpha(RR_{eps,t}).

    Definition: with c = a - 1, b = eps/2, a' = c b: the supremum over t is at
    e^{t - b} = c sinh(a'+b) / ((c+1) sinh a') and equals
    [c (t - b) + log(sinh(a'+b) / ((c+1) sinh b))] / c (module docstring).
    Guarantee: an upper bound within a few ulps (outward rounding), capped at epsilon;
    accurate down to alpha -> 1 and tiny epsilon (tested against mpmath at 50 digits).
    Runtime: O(1).
    """
    return _scalar(_br_terms, epsilon, alpha)


# --------------------------------------------------------------------------
# the composed curve
# --------------------------------------------------------------------------

def _grouped(values) -> tuple[np.ndarray, np.ndarray]:
    """Collapse repeated epsilons (positive ones only): (epsilons, counts)."""
    arr = np.asarray(values if values is not None else (), dtype=float).reshape(-1)
    if arr.size and (not np.all(np.isfinite(arr)) or np.any(arr < 0)):
        raise ValueError("epsilons must be finite and >= 0")
    unique, counts = np.unique(arr[arr > 0], return_counts=True)
    return unique, counts.astype(float)


#: With more distinct epsilons than this, the best order is located on a coarser curve
#: (10^5 distinct epsilons: 190 orders x 10^5 terms took seconds).
_LOCATE_MIN_DISTINCT = 2048
#: Significant bits kept when rounding epsilons up for locating the order.
_LOCATE_BITS = 10


def _rounded_up(values: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """values rounded up to _LOCATE_BITS significant bits (exact float operations),
    regrouped with summed counts."""
    if values.size == 0:
        return values, counts
    mantissa, exponent = np.frexp(values)
    scale = float(2 ** _LOCATE_BITS)
    rounded = np.ldexp(np.ceil(mantissa * scale) / scale, exponent)
    unique, inverse = np.unique(rounded, return_inverse=True)
    return unique, np.bincount(inverse, weights=counts).astype(float)


class _Curve:
    """R(a) = sum n_i D_a(eps_i) + xi + a rho, evaluated with explicit error bounds."""

    def __init__(self, dp_epsilons, br_epsilons, xi, rho):
        self.dp, self.dp_counts = _grouped(dp_epsilons)
        self.br, self.br_counts = _grouped(br_epsilons)
        self.xi = check_nonnegative("xi", xi)
        self.rho = check_nonnegative("rho", rho)
        # the largest possible loss of the pure part, exactly
        self.exact_pure_total = (exact_rational_sum(self.dp, self.dp_counts.astype(np.int64))
                                 + exact_rational_sum(self.br, self.br_counts.astype(np.int64)))
        self.pure_total = float(self.exact_pure_total)

    def coarse(self) -> "_Curve | None":
        """The same curve with the epsilons rounded up to ``_LOCATE_BITS`` significant
        bits (few distinct values), to locate the best order cheaply; None when there
        are at most ``_LOCATE_MIN_DISTINCT`` distinct epsilons already."""
        if self.dp.size + self.br.size <= _LOCATE_MIN_DISTINCT:
            return None
        coarse = object.__new__(_Curve)
        coarse.xi, coarse.rho = self.xi, self.rho
        coarse.dp, coarse.dp_counts = _rounded_up(self.dp, self.dp_counts)
        coarse.br, coarse.br_counts = _rounded_up(self.br, self.br_counts)
        coarse.exact_pure_total = (exact_rational_sum(coarse.dp, coarse.dp_counts.astype(np.int64))
                                   + exact_rational_sum(coarse.br, coarse.br_counts.astype(np.int64)))
        coarse.pure_total = float(coarse.exact_pure_total)
        return coarse

    def _parts(self, c: np.ndarray) -> tuple[np.ndarray, ...]:
        """Sums over the pure mechanisms of n c D_a, n c (D_a - eps) and of their
        absolute error bounds, for every c in the 1-d array ``c``."""
        zero = np.zeros_like(c)
        full, excess, full_error, excess_error = zero, zero, zero, zero
        for terms, eps, counts in ((_dp_terms, self.dp, self.dp_counts),
                                   (_br_terms, self.br, self.br_counts)):
            if eps.size:
                f, x, fe, xe = terms(eps[:, None], c[None, :])
                # (+ eps.size ulps: the rounding of the sums themselves)
                ulps = (_ERROR_ULPS + eps.size) * _ULP
                full = full + counts @ f
                excess = excess + counts @ x
                full_error = full_error + ulps * (counts @ fe)
                excess_error = excess_error + ulps * (counts @ xe)
        return full, excess, full_error, excess_error

    def epsilon_at(self, c: np.ndarray, log_inv_delta: float) -> np.ndarray:
        """Upper bounds on R(a) + (log(1/delta) + (a-1) log(1 - 1/a) - log a) / (a-1), a = 1 + c."""
        full, _, full_error, _ = self._parts(c)
        penalty = c * np.log1p(1.0 / c) + np.log1p(c)
        zcdp = self.xi + (1.0 + c) * self.rho
        value = (full + log_inv_delta - penalty) / c + zcdp
        error = full_error / c + _ERROR_ULPS * _ULP * ((np.abs(full) + log_inv_delta + penalty) / c + zcdp)
        return value + error

    def log_delta_at(self, c: np.ndarray, epsilon_g: float) -> np.ndarray:
        """Upper bounds on (a-1)(R(a) - eps_g) - log a + (a-1) log(1 - 1/a), a = 1 + c."""
        _, excess, _, excess_error = self._parts(c)
        gap = c * float(self.exact_pure_total - Fraction(epsilon_g))    # c (sum eps - eps_g)
        zcdp = c * (self.xi + (1.0 + c) * self.rho)
        penalty = c * np.log1p(1.0 / c) + np.log1p(c)
        value = gap + excess + zcdp - penalty
        error = excess_error + _ERROR_ULPS * _ULP * (np.abs(gap) + np.abs(excess) + zcdp + penalty)
        return value + error


def _minimise_over_orders(objective, locate=None) -> float:
    """min over log(alpha - 1) in [-9, 12] of the vectorised ``objective``: a grid,
    then seven zooms (each 10x finer) around the best point. Any order gives a valid
    bound, so an imprecise minimum only loses tightness. With ``locate`` (a cheaper
    objective of nearly the same shape) the search runs on it and ``objective`` is
    evaluated only at the located order and its two final neighbours."""
    if locate is not None:
        centre, spacing, _ = _locate_order(locate)
        grid = np.clip(centre + spacing * np.array([-1.0, 0.0, 1.0]), -9.0, 12.0)
        with np.errstate(over="ignore", invalid="ignore"):
            values = objective(np.exp(grid))
        values = np.where(np.isnan(values), np.inf, values)
        return float(values.min())
    return _locate_order(objective)[2]


def _locate_order(objective) -> tuple[float, float, float]:
    """(log(alpha - 1) of the best order, the last zoom's spacing, the best value)."""
    grid = np.linspace(-9.0, 12.0, 43)
    with np.errstate(over="ignore", invalid="ignore"):
        values = objective(np.exp(grid))
    values = np.where(np.isnan(values), np.inf, values)
    best_index = int(np.argmin(values))
    best, centre, spacing = float(values[best_index]), float(grid[best_index]), 0.5
    for _ in range(7):
        grid = np.clip(centre + np.linspace(-spacing, spacing, 21), -9.0, 12.0)
        with np.errstate(over="ignore", invalid="ignore"):
            values = objective(np.exp(grid))
        values = np.where(np.isnan(values), np.inf, values)
        index = int(np.argmin(values))
        if values[index] < best:
            best, centre = float(values[index]), float(grid[index])
        spacing /= 10.0
    return centre, spacing * 10.0, best


def rdp_epsilon(target_delta: float, *, dp_epsilons=(), br_epsilons=(), xi: float = 0.0,
                rho: float = 0.0) -> float:
    """Epsilon at ``target_delta`` of the exact-Renyi route (see module docstring).

    Theorem: RDP composition [Mironov 2017] of the exact worst-case Renyi curves
    of epsilon-DP (RR_{2eps,eps}) and epsilon-BR (sup_t RR_{eps,t}) mechanisms plus
    (xi, rho)-zCDP terms, converted by [CKS] Prop. 12 / [Balle et al. 2020].
    Assumptions: adaptive or set-wise (hence non-adaptive) composition;
    heterogeneous.
    Guarantee: valid upper bound (each order gives a valid epsilon, evaluated with
    an explicit floating-point error bound added; we minimise over orders
    numerically); rounded up.
    Runtime: O(m) per order for m distinct epsilons, 190 orders (vectorised).
    """
    delta = check_probability("target_delta", target_delta)
    curve = _Curve(dp_epsilons, br_epsilons, xi, rho)
    if delta >= 1:
        return 0.0
    if curve.pure_total == 0 and curve.rho == 0:
        return round_up(curve.xi)      # a constant curve xi: (xi, 0)-zCDP is xi-DP
    if delta == 0:
        return math.inf
    log_inv = -math.log(delta)
    coarse = curve.coarse()
    best = _minimise_over_orders(lambda c: curve.epsilon_at(c, log_inv),
                                 None if coarse is None else lambda c: coarse.epsilon_at(c, log_inv))
    return round_up(max(best, 0.0))


def rdp_delta(epsilon_g: float, *, dp_epsilons=(), br_epsilons=(), xi: float = 0.0,
              rho: float = 0.0) -> float:
    """Delta at ``epsilon_g`` of the exact-Renyi route: inf over orders a of
    e^{(a-1)(R(a) - eps_g)} / a (1 - 1/a)^{a-1}. Theorem, assumptions, guarantee:
    as :func:`rdp_epsilon` (clipped at 1). Runtime: as :func:`rdp_epsilon`.
    """
    eg = check_nonnegative("epsilon_g", epsilon_g, allow_inf=True)
    curve = _Curve(dp_epsilons, br_epsilons, xi, rho)
    if math.isinf(eg):
        return 0.0
    coarse = curve.coarse()
    best = _minimise_over_orders(lambda c: curve.log_delta_at(c, eg),
                                 None if coarse is None else lambda c: coarse.log_delta_at(c, eg))
    return 1.0 if best >= 0 else safe_delta(math.exp(best))
