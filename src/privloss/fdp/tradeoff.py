"""Tradeoff functions (f-DP): the best test's type II error at each type I error.

Definition
    For output laws P = M(D), Q = M(D'), an attacker tests H0: "the data is D"
    against H1: "the data is D'". T(P, Q)(alpha) is the smallest type II error
    (missing D') of any test whose type I error (falsely accusing D') is at most
    alpha [DRS Def. 2.1]. A tradeoff function is convex, continuous,
    non-increasing and below 1 - alpha; 1 - alpha itself is perfect privacy.
    M is f-DP if T(M(D), M(D')) >= f for all neighbours [DRS Def. 2.3].
Conventions (spec fdp.md §7)
    ``curve.delta(eps) = sup_alpha [1 - f(alpha) - e^eps alpha]``; for f = T(P, Q)
    this is delta_{Q||P}(eps), and for a *symmetric* f it is the privacy
    profile of the mechanism: M is f-DP iff it is (eps, delta(eps))-DP for all
    eps >= 0 [DRS Prop. 2.12]. ``curve.inverse()`` is T(Q, P).

Every class evaluates its curve exactly (closed forms or vertices); nothing
here is an approximation except :mod:`privloss.fdp.clt`.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import ndtr, ndtri

from privloss.bounds._numeric import check_count, check_nonnegative, check_positive, check_probability


def _alphas(alpha) -> tuple[np.ndarray, bool]:
    array = np.asarray(alpha, dtype=np.float64)
    if np.isnan(array).any() or (array < 0).any() or (array > 1).any():
        raise ValueError(f"alpha must lie in [0, 1], got {alpha!r}")
    return array, array.ndim == 0


class TradeoffCurve:
    """Base class: subclasses implement ``_evaluate`` (on a float array) and ``delta``."""

    label: str = "tradeoff"
    symmetric: bool = False

    def __call__(self, alpha):
        """beta = f(alpha); ``alpha`` a number or array in [0, 1]."""
        array, scalar = _alphas(alpha)
        values = np.clip(self._evaluate(np.atleast_1d(array)), 0.0, 1.0)
        values = np.minimum(values, 1.0 - np.atleast_1d(array))
        return float(values[0]) if scalar else values.reshape(array.shape)

    def _evaluate(self, alpha: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def delta(self, epsilon: float) -> float:  # pragma: no cover - abstract
        """sup_alpha [1 - f(alpha) - e^epsilon alpha] (fdp.md §7)."""
        raise NotImplementedError

    def inverse(self) -> "TradeoffCurve":
        """f^{-1} = T(Q, P); a symmetric curve is its own inverse."""
        if self.symmetric:
            return self
        raise NotImplementedError(f"{type(self).__name__} has no inverse")

    def points(self, count: int = 1001) -> tuple[np.ndarray, np.ndarray]:
        """(alpha, beta) on ``count`` points, denser near alpha = 0 where curves are steep."""
        count = check_count("count", count, minimum=2)
        uniform = np.linspace(0.0, 1.0, count)
        steep = np.geomspace(1e-12, 1.0, count)
        alpha = np.unique(np.concatenate((uniform, steep)))
        return alpha, self(alpha)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.label})"


# ----------------------------------------------------------------------
# vertex curves
# ----------------------------------------------------------------------

class PiecewiseLinearTradeoff(TradeoffCurve):
    """A tradeoff curve given by its vertices (linear interpolation between them).

    Definition
        Vertices (alpha_i, beta_i) with alpha increasing from 0 to 1 and beta
        non-increasing; the curve must be convex (checked up to 1e-12). This is
        exactly the form of T(P, Q) for finitely many outputs (spec fdp.md §1).
    Privacy guarantee
        Exact evaluation; ``delta`` is the exact conjugate (evaluated at vertices).
    Citation
        [DRS] §2; spec fdp.md §§1, 7.
    Runtime
        O(log n) per alpha, O(n) per delta.
    """

    def __init__(self, alphas, betas, *, label: str = "piecewise linear", check: bool = True):
        a = np.asarray(alphas, dtype=np.float64).reshape(-1)
        b = np.asarray(betas, dtype=np.float64).reshape(-1)
        if a.size != b.size or a.size < 2:
            raise ValueError(f"alphas and betas must have the same length >= 2, got {a.size} and {b.size}")
        if np.isnan(a).any() or np.isnan(b).any():
            raise ValueError("alphas and betas must not contain NaN")
        if check:
            if a[0] != 0 or a[-1] != 1 or (np.diff(a) < 0).any():
                raise ValueError("alphas must increase from 0 to 1")
            if (b < 0).any() or (b > 1).any() or (np.diff(b) > 1e-12).any():
                raise ValueError("betas must be non-increasing values in [0, 1]")
        self._alphas, self._betas = a, np.clip(b, 0.0, 1.0)
        self.label = label
        self.symmetric = False

    @property
    def vertices(self) -> tuple[np.ndarray, np.ndarray]:
        return self._alphas.copy(), self._betas.copy()

    def _evaluate(self, alpha: np.ndarray) -> np.ndarray:
        return np.interp(alpha, self._alphas, self._betas)

    def delta(self, epsilon: float) -> float:
        eps = check_nonnegative("epsilon", epsilon)
        values = 1.0 - self._betas - math.exp(eps) * self._alphas
        return float(min(1.0, max(0.0, values.max())))

    def inverse(self) -> "PiecewiseLinearTradeoff":
        """T(Q, P): f^{-1}(y) = inf{alpha : f(alpha) <= y}, i.e. the graph reflected."""
        if self.symmetric:
            return self
        order = np.argsort(self._betas, kind="stable")       # ties keep the smallest alpha first
        x, y = self._betas[order], self._alphas[order]
        x, first = np.unique(x, return_index=True)
        y = y[first]
        if x[0] > 0:
            x, y = np.concatenate(([0.0], x)), np.concatenate(([y[0]], y))
        if x[-1] < 1:
            x, y = np.concatenate((x, [1.0])), np.concatenate((y, [0.0]))
        return PiecewiseLinearTradeoff(x, np.minimum.accumulate(y), label=f"{self.label} (inverse)",
                                       check=False)


class ApproxDPTradeoff(PiecewiseLinearTradeoff):
    """f_{eps,delta}(alpha) = max{0, 1 - delta - e^eps alpha, e^-eps (1 - delta - alpha)}.

    Definition
        The tradeoff curve of (epsilon, delta)-DP: M is (eps, delta)-DP iff it is
        f_{eps,delta}-DP [DRS Prop. 2.5; Wasserman–Zhou; KOV]. Symmetric; kink at
        alpha = (1 - delta)/(1 + e^eps). delta = 0 is randomized response (fdp.md §3.1).
    Privacy guarantee
        Exact.
    Citation
        [DRS] Prop. 2.5; spec fdp.md §2.
    Runtime
        O(1).
    """

    def __init__(self, epsilon: float, delta: float = 0.0):
        eps = check_nonnegative("epsilon", epsilon)
        d = check_probability("delta", delta)
        kink = (1.0 - d) / (1.0 + math.exp(eps)) if math.isfinite(eps) else 0.0
        alphas = [0.0, kink, 1.0 - d, 1.0] if d > 0 else [0.0, kink, 1.0]
        betas = [1.0 - d, kink, 0.0, 0.0] if d > 0 else [1.0, kink, 0.0]
        super().__init__(alphas, betas, label=f"f(eps={eps:g}, delta={d:g})", check=False)
        self.epsilon, self.delta_parameter = eps, d
        self.symmetric = True


def randomized_response_tradeoff(epsilon: float) -> ApproxDPTradeoff:
    """T(Bern(p), Bern(1-p)) = f_{eps,0} with p = e^eps/(1+e^eps) (fdp.md §3.1, exact)."""
    curve = ApproxDPTradeoff(epsilon, 0.0)
    curve.label = f"RR(eps={curve.epsilon:g})"
    return curve


class GeneralizedRRTradeoff(PiecewiseLinearTradeoff):
    """T(RR_{eps,t}(0), RR_{eps,t}(1))(alpha) = max{1 - e^{eps-t} alpha, e^{-t} (1 - alpha)}.

    Definition
        composition.md Def. 2.4 with P = RR(0) = (q, 1-q), Q = RR(1) = (p, 1-p):
        vertices (0, 1), (1 - q, p), (1, 0) (spec fdp.md §3.2). Asymmetric unless
        t = eps/2; ``inverse()`` is the curve of RR_{eps, eps-t}.
    Privacy guarantee
        Exact; ``delta(e)`` is delta_{Q||P}(e) (fdp.md §7 orientation).
    Citation
        Dong–Durfee–Rogers (2020); spec fdp.md §3.2.
    Runtime
        O(1).
    """

    def __init__(self, epsilon: float, t: float):
        eps = check_positive("epsilon", epsilon)
        t = check_nonnegative("t", t)
        if t > eps:
            raise ValueError(f"t must be in [0, epsilon={eps:g}], got {t!r}")
        p = (math.exp(-t) - math.exp(-eps)) / -math.expm1(-eps)
        q = -math.expm1(t - eps) / -math.expm1(-eps)
        super().__init__([0.0, 1.0 - q, 1.0], [1.0, p, 0.0], label=f"RR(eps={eps:g}, t={t:g})",
                         check=False)
        self.symmetric = 2 * t == eps


def rr_composition_tradeoff(epsilon: float, count: int) -> PiecewiseLinearTradeoff:
    """Exact tradeoff curve of ``count``-fold randomized response, f_{eps,0}^{(x) k} (fdp.md §3.5).

    Definition
        With i = number of coordinates that disagree, the loss is (k - 2i) eps,
        with P-mass C(k,i) p^{k-i} (1-p)^i and Q-mass C(k,i) p^i (1-p)^{k-i};
        vertices are the cumulative sums adding i = k, k-1, ..., 0.
    Privacy guarantee
        Exact; its conjugate is [CR] Theorem 1 (KOV/MV).
    Citation
        Dong's blog (seed 001); [DRS] §3; spec fdp.md §3.5.
    Runtime
        O(k) in log space.
    """
    eps = check_nonnegative("epsilon", epsilon)
    k = check_count("count", count)
    from privloss.bounds._numeric import log_binomial

    i = np.arange(k, -1, -1, dtype=np.float64)            # i = k, ..., 0 (smallest loss first)
    log_p = -np.logaddexp(0.0, -eps)                       # log e^eps/(1+e^eps)
    log_1mp = -np.logaddexp(0.0, eps)
    log_c = log_binomial(k, i)
    mass_p = np.exp(log_c + (k - i) * log_p + i * log_1mp)
    mass_q = np.exp(log_c + i * log_p + (k - i) * log_1mp)
    alphas = np.concatenate(([0.0], np.cumsum(mass_p)))
    betas = 1.0 - np.concatenate(([0.0], np.cumsum(mass_q)))
    alphas[-1], betas[-1] = 1.0, 0.0
    curve = PiecewiseLinearTradeoff(np.clip(alphas, 0, 1), np.clip(betas, 0, 1),
                                    label=f"{k} x RR(eps={eps:g})", check=False)
    curve.symmetric = True
    return curve


# ----------------------------------------------------------------------
# closed-form curves
# ----------------------------------------------------------------------

class LaplaceTradeoff(TradeoffCurve):
    """T(Lap(0, b), Lap(Delta, b)) with eps0 = Delta/b (fdp.md §3.3).

    Definition
        f(alpha) = 1 - e^eps0 alpha for alpha < e^-eps0/2; e^-eps0 / (4 alpha) on
        [e^-eps0/2, 1/2]; e^-eps0 (1 - alpha) for alpha > 1/2. Symmetric.
    Privacy guarantee
        Exact; delta(eps) = [1 - e^{(eps - eps0)/2}]_+ for eps >= 0.
    Citation
        [DRS]; Dong's blog (seed 001); spec fdp.md §3.3.
    Runtime
        O(1).
    """

    def __init__(self, epsilon0: float):
        self.epsilon0 = check_nonnegative("epsilon0", epsilon0)
        self.label = f"Laplace(eps0={self.epsilon0:g})"
        self.symmetric = True

    def _evaluate(self, alpha: np.ndarray) -> np.ndarray:
        e = self.epsilon0
        knee = 0.5 * math.exp(-e)
        with np.errstate(divide="ignore"):
            middle = math.exp(-e) / (4.0 * np.maximum(alpha, 1e-300))
        return np.where(alpha < knee, 1.0 - math.exp(e) * alpha,
                        np.where(alpha <= 0.5, middle, math.exp(-e) * (1.0 - alpha)))

    def delta(self, epsilon: float) -> float:
        eps = check_nonnegative("epsilon", epsilon)
        if eps >= self.epsilon0:
            return 0.0
        return float(-math.expm1(0.5 * (eps - self.epsilon0)))


class GaussianTradeoff(TradeoffCurve):
    """G_mu(alpha) = Phi(Phi^{-1}(1 - alpha) - mu) = T(N(0,1), N(mu,1)) (fdp.md §3.4).

    Definition
        Gaussian differential privacy: M is mu-GDP if it is G_mu-DP [DRS Def. 2.6].
        Symmetric; G_0 is perfect privacy.
    Privacy guarantee
        Exact; delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2).
    Citation
        Dong–Roth–Su, "Gaussian Differential Privacy", JRSS-B 2022.
    Runtime
        O(1).
    """

    def __init__(self, mu: float):
        self.mu = check_nonnegative("mu", mu)
        self.label = f"G(mu={self.mu:g})"
        self.symmetric = True

    def _evaluate(self, alpha: np.ndarray) -> np.ndarray:
        # Phi^{-1}(1 - alpha) = -Phi^{-1}(alpha): accurate for small alpha
        with np.errstate(divide="ignore"):
            return ndtr(-ndtri(alpha) - self.mu)

    def delta(self, epsilon: float) -> float:
        from privloss.fdp.gdp import gdp_delta

        return gdp_delta(self.mu, epsilon)

    def log_slope(self, alpha) -> np.ndarray:
        """log |G_mu'(alpha)| = mu z - mu^2/2 with z = Phi^{-1}(1 - alpha) (fdp.md §3.4)."""
        array, _ = _alphas(alpha)
        return self.mu * -ndtri(array) - 0.5 * self.mu ** 2


class EnvelopeTradeoff(TradeoffCurve):
    """Pointwise maximum of tradeoff curves (each a valid lower bound -> so is the max).

    Definition
        f(alpha) = max_j f_j(alpha). With f_j = f_{eps_j, delta_j} this is the
        curve implied by a finite list of (eps, delta) guarantees (fdp.md §7).
    Privacy guarantee
        Valid (if each f_j is), not tight in general. ``delta`` is a safe *upper*
        bound on the conjugate: on each cell [a_i, a_{i+1}] of a fine grid
        (40,000 points, including every member vertex) f is non-increasing, so
        sup [1 - f - e^eps alpha] <= 1 - f(a_{i+1}) - e^eps a_i.
    Runtime
        O(sum of members).
    """

    def __init__(self, curves, *, label: str = "envelope"):
        self.curves = list(curves)
        if not self.curves:
            raise ValueError("curves must contain at least one TradeoffCurve")
        for position, curve in enumerate(self.curves):
            if not isinstance(curve, TradeoffCurve):
                raise TypeError(f"curves[{position}] must be a TradeoffCurve, got {type(curve).__name__}")
        self.label = label
        self.symmetric = all(curve.symmetric for curve in self.curves)

    def _evaluate(self, alpha: np.ndarray) -> np.ndarray:
        return np.max([curve(alpha) for curve in self.curves], axis=0)

    def delta(self, epsilon: float) -> float:
        eps = check_nonnegative("epsilon", epsilon)
        grid = [np.linspace(0.0, 1.0, 20001), np.geomspace(1e-12, 1.0, 20001)]
        grid += [curve.vertices[0] for curve in self.curves if isinstance(curve, PiecewiseLinearTradeoff)]
        dense = np.unique(np.concatenate(grid))
        values = 1.0 - self(dense[1:]) - math.exp(eps) * dense[:-1]
        return float(min(1.0, max(0.0, values.max())))


def identity_tradeoff() -> PiecewiseLinearTradeoff:
    """Id(alpha) = 1 - alpha: perfect privacy (the attacker can only guess)."""
    curve = PiecewiseLinearTradeoff([0.0, 1.0], [1.0, 0.0], label="perfect privacy", check=False)
    curve.symmetric = True
    return curve

