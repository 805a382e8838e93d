"""Central limit theorem for composition: an APPROXIMATION, never a guarantee.

Definition
    For f = T(P, Q) with privacy loss L = log(P/Q) under P (spec fdp.md §6):
    kl = E[L], kappa2 = E[L^2], kappa3 = E|L|^3, kappa3_bar = E|L - E L|^3.
    For k composed mechanisms [DRS §3.2]:
        mu = 2 sum kl_i / sqrt(sum kappa2_i - sum kl_i^2) = 2 sum E L_i / sqrt(sum Var L_i),
    and f_1 (x) ... (x) f_k ~ G_mu as k grows (DRS Thm 3.4).
Berry–Esseen band (recalled, constant 0.56 not re-checked against the paper)
    gamma = 0.56 sum kappa3_bar_i / (sum Var L_i)^{3/2}; if gamma < 1/2, for
    alpha in [gamma, 1 - gamma]: G_mu(alpha + gamma) - gamma <= f(alpha) <= G_mu(alpha - gamma) + gamma.
Privacy guarantee
    None. The CLT curve can be *optimistic* (for 25-fold randomized response
    with eps = 0.2 it lies 0.003 above the exact curve near alpha = 0.18, and
    its delta(0) is 0.3835 against the exact 0.3862); use the PLD (privloss.pld / privloss.fdp.convert)
    for certified curves. Everything here is labelled "approximation".
Citation
    Dong, Roth, Su, "Gaussian Differential Privacy", JRSS-B 2022, §3.2;
    Zheng, Dong, Long, Su (ICML 2020) for the i.i.d. parameter.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import integrate

from privloss.bounds._numeric import check_count, check_nonnegative, check_positive
from privloss.fdp.gdp import gdp_delta, gdp_epsilon
from privloss.fdp.tradeoff import GaussianTradeoff

#: Berry–Esseen constant as recalled in spec fdp.md §6 (re-check before relying on it).
BERRY_ESSEEN_CONSTANT = 0.56


@dataclass(frozen=True)
class LossMoments:
    """Moments of the privacy loss under P: E L, E L^2, E|L|^3, E|L - E L|^3."""

    kl: float
    kappa2: float
    kappa3: float
    kappa3_bar: float

    @property
    def variance(self) -> float:
        return max(self.kappa2 - self.kl * self.kl, 0.0)

    def times(self, count: int) -> list["LossMoments"]:
        return [self] * check_count("count", count)


def randomized_response_moments(epsilon: float) -> LossMoments:
    """Loss +-eps with P-probabilities a = e^eps/(1+e^eps), 1 - a (closed form)."""
    eps = check_nonnegative("epsilon", epsilon)
    a = 1.0 / (1.0 + math.exp(-eps))
    kl = eps * math.tanh(eps / 2.0)
    bar = 8.0 * eps ** 3 * a * (1 - a) * ((1 - a) ** 2 + a ** 2)
    return LossMoments(kl, eps * eps, eps ** 3, bar)


def generalized_rr_moments(epsilon: float, t: float) -> LossMoments:
    """RR_{eps,t}: loss t w.p. q and t - eps w.p. 1 - q (composition.md Def. 2.4)."""
    eps = check_positive("epsilon", epsilon)
    t = check_nonnegative("t", t)
    q = -math.expm1(t - eps) / -math.expm1(-eps)
    values = np.array([t, t - eps])
    weights = np.array([q, 1.0 - q])
    return _discrete_moments(values, weights)


def gaussian_moments(mu: float) -> LossMoments:
    """L ~ N(mu^2/2, mu^2): closed forms (E|N(m, s^2)|^3 by its folded-normal formula)."""
    m_ = check_nonnegative("mu", mu)
    mean, sd = 0.5 * m_ * m_, m_
    if sd == 0:
        return LossMoments(0.0, 0.0, 0.0, 0.0)
    from scipy.stats import norm

    r = mean / sd
    # E|X|^3 for X ~ N(m, s^2): s^3 [ (r^3 + 3r)(1 - 2 Phi(-r)) + 2 (r^2 + 2) phi(r) ]
    third = sd ** 3 * ((r ** 3 + 3 * r) * (1 - 2 * norm.cdf(-r)) + 2 * (r * r + 2) * norm.pdf(r))
    return LossMoments(mean, sd * sd + mean * mean, float(third), 2.0 * math.sqrt(2.0 / math.pi) * sd ** 3)


def laplace_moments(epsilon0: float) -> LossMoments:
    """Laplace PLD (atoms +-eps0, density e^{-eps0/2} e^{l/2}/4 on (-eps0, eps0)), by quadrature."""
    e = check_nonnegative("epsilon0", epsilon0)
    if e == 0:
        return LossMoments(0.0, 0.0, 0.0, 0.0)
    atoms = np.array([e, -e])
    weights = np.array([0.5, 0.5 * math.exp(-e)])

    def density(x):
        return 0.25 * math.exp(-e / 2.0 + x / 2.0)

    def moment(function):
        continuous, _ = integrate.quad(lambda x: function(x) * density(x), -e, e, epsabs=1e-15, epsrel=1e-13)
        return float(np.dot(weights, [function(a) for a in atoms])) + continuous

    kl = e + math.exp(-e) - 1.0          # KL(Lap(0,1) || Lap(eps0,1)), closed form
    return LossMoments(kl, moment(lambda x: x * x), moment(lambda x: abs(x) ** 3),
                       moment(lambda x: abs(x - kl) ** 3))


def _discrete_moments(values: np.ndarray, weights: np.ndarray) -> LossMoments:
    weights = weights / weights.sum()
    kl = float(np.dot(weights, values))
    return LossMoments(kl, float(np.dot(weights, values ** 2)), float(np.dot(weights, np.abs(values) ** 3)),
                       float(np.dot(weights, np.abs(values - kl) ** 3)))


def pld_moments(pld) -> LossMoments:
    """Moments of a discretised PLD (forward order, pessimistic grid law; approximate).

    Only for the CLT, which is an approximation anyway; fails if the loss has
    mass at +inf (the CLT does not apply).
    """
    _, upper, _ = pld.orders()[0]
    if upper.infinity_mass > 0:
        raise ValueError("the CLT needs a finite privacy loss; this PLD has mass at +inf")
    return _discrete_moments(upper.losses(), upper.masses)


@dataclass(frozen=True)
class CLTApproximation:
    """G_mu approximation of a composition (DRS Thm 3.4) with the Berry–Esseen band.

    ``is_guarantee`` is always False: this is an approximation.
    """

    mu: float
    gamma: float
    count: int
    is_guarantee: bool = False

    def tradeoff(self) -> GaussianTradeoff:
        curve = GaussianTradeoff(self.mu)
        curve.label = f"CLT approximation G(mu={self.mu:.4g})"
        return curve

    def band(self, alpha) -> tuple[np.ndarray, np.ndarray]:
        """(lower, upper) Berry–Esseen envelope at ``alpha``; NaN outside [gamma, 1 - gamma]
        or when gamma >= 1/2. Uses the recalled constant 0.56 (not a guarantee)."""
        a = np.asarray(alpha, dtype=np.float64)
        g = GaussianTradeoff(self.mu)
        inside = (a >= self.gamma) & (a <= 1 - self.gamma) & (self.gamma < 0.5)
        lower = np.where(inside, g(np.clip(a + self.gamma, 0, 1)) - self.gamma, np.nan)
        upper = np.where(inside, g(np.clip(a - self.gamma, 0, 1)) + self.gamma, np.nan)
        return np.clip(lower, 0, 1), np.clip(upper, 0, 1)

    def delta(self, epsilon: float) -> float:
        """delta of G_mu at epsilon (approximation of the composition's delta)."""
        return gdp_delta(self.mu, epsilon)

    def epsilon(self, delta: float) -> float:
        """epsilon of G_mu at delta (approximation of the composition's epsilon)."""
        return gdp_epsilon(self.mu, delta)


def clt_approximation(moments) -> CLTApproximation:
    """CLT parameters of a composition from the per-mechanism loss moments (APPROXIMATION).

    Definition
        mu = 2 sum kl_i / sqrt(sum kappa2_i - sum kl_i^2);
        gamma = 0.56 sum kappa3_bar_i / (sum kappa2_i - sum kl_i^2)^{3/2}.
    Privacy guarantee
        None (see the module docstring).
    Citation
        [DRS] Thm 3.4 and its Berry–Esseen form; spec fdp.md §6; worked_values §7
        (k-fold RR: eps = 0.2, k = 25 -> mu = 1.0016675002).
    Runtime
        O(k).
    """
    items = list(moments)
    if not items:
        raise ValueError("moments must contain at least one LossMoments")
    for position, item in enumerate(items):
        if not isinstance(item, LossMoments):
            raise TypeError(f"moments[{position}] must be LossMoments, got {type(item).__name__}")
    kl = math.fsum(m.kl for m in items)
    variance = math.fsum(m.kappa2 for m in items) - math.fsum(m.kl ** 2 for m in items)
    if variance <= 0:
        return CLTApproximation(0.0, 0.0, len(items))
    mu = 2.0 * kl / math.sqrt(variance)
    gamma = BERRY_ESSEEN_CONSTANT * math.fsum(m.kappa3_bar for m in items) / variance ** 1.5
    return CLTApproximation(mu, gamma, len(items))
