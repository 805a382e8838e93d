"""Conversions: PLD -> tradeoff curve bracket, tradeoff curve <-> (epsilon, delta) profile.

Tradeoff curve of a (composed) mechanism from its PLD [derived, spec fdp.md §§7-8]:
for the ordered pair (P, Q) with profile delta_{P||Q}(s) over all real s,

    T(P, Q)(alpha) = sup_{s in R} e^{-s} [1 - alpha - delta_{P||Q}(s)]_+ .

(From Q(S) - e^eps P(S) <= delta_{Q||P}(eps) and delta_{Q||P}(eps) = 1 - e^eps +
e^eps delta_{P||Q}(-eps).) The right side is monotone in delta, so the
certified delta bracket of a PLD gives a certified curve bracket: the
pessimistic law's delta gives a curve *below* the truth (a valid f-DP
guarantee), the optimistic law's delta a curve above it. For a law on a grid
the sup is attained at grid points, giving vertices (alpha_j, beta_j) =
(P[L <= l_j], implied Q[L > l_j]) (fdp.md §8); the certified error e and
shift s enter as  lower(alpha) = e^{-s} f_W(alpha + e),
upper(alpha) = min(1 - alpha, e^{s} f_W(alpha - e)).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from privloss.bounds._numeric import check_nonnegative
from privloss.fdp.tradeoff import ApproxDPTradeoff, EnvelopeTradeoff, TradeoffCurve

_U = 2.0 ** -53


class PLDTradeoff(TradeoffCurve):
    """One side of the certified tradeoff bracket of a discretised PLD law.

    Definition
        See the module docstring; ``side="lower"`` comes from the pessimistic
        law and is a valid f-DP curve; ``side="upper"`` from the optimistic law.
    Privacy guarantee
        lower(alpha) <= T(P, Q)(alpha) <= upper(alpha) for every alpha.
    Runtime
        O(n) to build, O(log n) per alpha.
    """

    def __init__(self, law, *, side: str, label: str = "PLD"):
        if side not in ("lower", "upper"):
            raise ValueError(f"side must be 'lower' or 'upper', got {side!r}")
        alphas, betas = law.tradeoff_vertices()
        rel = (3.0 * law.size + 16.0) * _U
        # the sum/logsumexp tables carry relative error rel: push outward
        if side == "lower":
            betas = betas * (1 - rel) * math.exp(-law.shift)
            alphas = alphas - law.error - rel
        else:
            betas = betas * (1 + rel) * math.exp(law.shift)
            alphas = alphas + law.error + rel
        self._alphas, self._betas = alphas, betas
        self._side = side
        self.label = f"{label} ({side})"
        self.symmetric = False

    def _evaluate(self, alpha: np.ndarray) -> np.ndarray:
        a, b = self._alphas, self._betas
        values = np.interp(alpha, a, b, left=np.nan, right=0.0)
        below = alpha < a[0]
        if below.any():
            if self._side == "lower":
                # below the first vertex the curve can only be larger: use that vertex's
                # value (a tradeoff curve is non-increasing), which is a lower bound
                values = np.where(below, b[0], values)
            else:
                # convexity: T(alpha) <= chord from (0, 1) to the first vertex
                first = max(a[0], 1e-300)
                chord = 1.0 + (min(b[0], 1.0) - 1.0) * (alpha / first)
                values = np.where(below, chord, values)
        return values

    def delta(self, epsilon: float) -> float:
        """Conjugate sup_alpha [1 - f(alpha) - e^eps alpha] at the vertices (exact for this curve)."""
        eps = check_nonnegative("epsilon", epsilon)
        alphas = np.clip(np.concatenate(([0.0], self._alphas, [1.0])), 0.0, 1.0)
        values = 1.0 - self(alphas) - math.exp(eps) * alphas
        return float(min(1.0, max(0.0, values.max())))


class MinimumTradeoff(TradeoffCurve):
    """Pointwise minimum of tradeoff curves: the f-DP guarantee over both orders of a pair.

    A mechanism whose pairs have curves T(P, Q) >= f1 and T(Q, P) >= f2 is
    min(f1, f2)-DP (valid, possibly non-convex; DRS symmetrise it further).
    ``delta`` takes the max of the members' deltas (an upper bound on the
    conjugate of the minimum, which is the max over members).
    """

    def __init__(self, curves, *, label: str = "minimum"):
        self.curves = list(curves)
        if not self.curves:
            raise ValueError("curves must contain at least one TradeoffCurve")
        self.label = label
        self.symmetric = len(self.curves) == 1 and self.curves[0].symmetric

    def _evaluate(self, alpha: np.ndarray) -> np.ndarray:
        return np.min([curve(alpha) for curve in self.curves], axis=0)

    def delta(self, epsilon: float) -> float:
        return max(curve.delta(epsilon) for curve in self.curves)


@dataclass(frozen=True)
class TradeoffBracket:
    """Certified bracket: lower(alpha) <= true tradeoff curve(alpha) <= upper(alpha)."""

    lower: TradeoffCurve
    upper: TradeoffCurve
    label: str = ""

    def __call__(self, alpha):
        return self.lower(alpha), self.upper(alpha)

    def points(self, count: int = 1001):
        """(alpha, lower beta, upper beta) for plotting or CSV."""
        alpha, lower = self.lower.points(count)
        return alpha, lower, self.upper(alpha)


def pld_tradeoff(pld, *, label: str | None = None) -> dict[str, TradeoffBracket]:
    """Certified tradeoff-curve brackets of a PLD, per order of the pair.

    Definition
        ``{"forward": bracket of T(P, Q), "reverse": bracket of T(Q, P)}``; a
        symmetric PLD has only "forward" (T(P, Q) = T(Q, P)).
    Privacy guarantee
        Each ``lower`` is a valid tradeoff lower bound for its order.
    Citation
        [DRS] Prop. 2.12 and §3 (composition = product pairs); spec fdp.md §§7-8.
    Runtime
        O(n) in the number of grid points.
    """
    name = label or pld.description or "PLD"
    result = {}
    for order, upper_law, lower_law in pld.orders():
        suffix = "" if order == "forward" else " (reverse)"
        result[order] = TradeoffBracket(PLDTradeoff(upper_law, side="lower", label=name + suffix),
                                        PLDTradeoff(lower_law, side="upper", label=name + suffix),
                                        label=name + suffix)
    return result


def mechanism_tradeoff(pld, *, label: str | None = None) -> TradeoffBracket:
    """The f-DP curve bracket of the mechanism: minimum over both orders of the pair."""
    brackets = pld_tradeoff(pld, label=label)
    if len(brackets) == 1:
        return brackets["forward"]
    name = label or pld.description or "PLD"
    return TradeoffBracket(MinimumTradeoff([b.lower for b in brackets.values()], label=f"{name} (lower)"),
                           MinimumTradeoff([b.upper for b in brackets.values()], label=f"{name} (upper)"),
                           label=name)


def profile_from_tradeoff(curve: TradeoffCurve, epsilons) -> np.ndarray:
    """delta(eps) = 1 + f^*(-e^eps) at each epsilon (fdp.md §7).

    For f = T(P, Q) this is delta_{Q||P}; for a symmetric f the privacy profile.
    """
    if not isinstance(curve, TradeoffCurve):
        raise TypeError(f"curve must be a TradeoffCurve, got {type(curve).__name__}")
    values = np.atleast_1d(np.asarray(epsilons, dtype=np.float64))
    return np.array([curve.delta(float(e)) for e in values])


def tradeoff_from_profile(epsilons, deltas) -> EnvelopeTradeoff:
    """max_j f_{eps_j, delta_j}: the (valid, not tight) curve of a list of (eps, delta) guarantees.

    Citation
        [DRS] Prop. 2.12 (equality when the list is the whole profile); fdp.md §7.
    """
    eps = np.atleast_1d(np.asarray(epsilons, dtype=np.float64))
    dels = np.atleast_1d(np.asarray(deltas, dtype=np.float64))
    if eps.shape != dels.shape or eps.size == 0:
        raise ValueError(f"epsilons and deltas must be non-empty and of equal length, got {eps.size} and {dels.size}")
    curves = [ApproxDPTradeoff(float(e), float(d)) for e, d in zip(eps, dels)]
    return EnvelopeTradeoff(curves, label="from (eps, delta) profile")
