"""Exact descriptions of one mechanism's privacy-loss law (one order of the pair).

A :class:`LossSpec` is what the discretiser needs: finite atoms (loss, P-mass),
at most one continuous part that can report the exact P- and Q-masses of loss
intervals (with absolute error bounds), the P-mass at +inf (outputs impossible
under Q), and the tails that were cut off (mass and where they start).

Every mass is accompanied by an absolute error bound so the discretiser can
push float error outward; the bounds assume the documented accuracy of the
library special functions (:data:`SPECIAL_FUNCTION_RELATIVE_ERROR`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtr

#: Assumed relative accuracy of numpy/scipy exp, expm1, log, log1p and ndtr
#: (about 45 ulps; the libraries claim a few ulps). Tests check ndtr against mpmath.
SPECIAL_FUNCTION_RELATIVE_ERROR = 1e-14
_U = 2.0 ** -53


@dataclass(frozen=True)
class ExpTiltPart:
    """Continuous loss part with P-density A e^{l/2} and Q-density A e^{-l/2} on [lo, hi].

    This is the interior of the Laplace PLD (A = e^{-eps0/2}/4 on (-eps0, eps0))
    and of the bounded-range envelope (A = e^{-eps/2} / (2 (1 - e^{-eps}))).
    Interval masses are closed forms without cancellation:
    P(a, b] = 2A e^{a/2} expm1((b-a)/2), Q(a, b] = 2A e^{-b/2} expm1((b-a)/2).
    """

    log_coefficient: float
    lo: float
    hi: float

    def masses(self, edges: np.ndarray):
        a = np.clip(edges[:-1], self.lo, self.hi)
        b = np.clip(edges[1:], self.lo, self.hi)
        width = np.expm1(0.5 * (b - a))
        log_two_a = math.log(2.0) + self.log_coefficient
        p = np.exp(log_two_a + 0.5 * a) * width
        q = np.exp(log_two_a - 0.5 * b) * width
        # exp of an argument x carries relative error ~ u |x| from rounding x itself
        rel_p = 2 * SPECIAL_FUNCTION_RELATIVE_ERROR + 8 * _U * (np.abs(log_two_a) + np.abs(a) + 2)
        rel_q = 2 * SPECIAL_FUNCTION_RELATIVE_ERROR + 8 * _U * (np.abs(log_two_a) + np.abs(b) + 2)
        return p, q, p * rel_p, q * rel_q


def _normal_interval(za: np.ndarray, zb: np.ndarray):
    """Phi(zb) - Phi(za) for za <= zb, with an absolute error bound.

    Uses the tail on the side where both ends lie, so the subtraction never
    loses the relative accuracy of a tiny tail; straddling intervals are O(1).
    """
    right = za >= 0
    low = np.where(right, ndtr(-zb), ndtr(za))
    high = np.where(right, ndtr(-za), ndtr(zb))
    value = np.maximum(high - low, 0.0)
    error = SPECIAL_FUNCTION_RELATIVE_ERROR * (high + low) + _U * high
    return value, error


@dataclass(frozen=True)
class GaussianPart:
    """Continuous loss part: P-law N(mean, scale^2), Q-law N(-mean, scale^2) restricted to [lo, hi].

    ``normalizer`` divides both (1 for the Gaussian mechanism; Phi(c) - Phi(-c)
    for the truncated Gaussian, whose loss is the same affine function of the
    output on the common support). Since dQ/dP = e^{-l}, mean = scale^2 / 2.
    """

    mean: float
    scale: float
    lo: float
    hi: float
    normalizer: float = 1.0

    def masses(self, edges: np.ndarray):
        a = np.clip(edges[:-1], self.lo, self.hi)
        b = np.clip(edges[1:], self.lo, self.hi)
        p, ep = _normal_interval((a - self.mean) / self.scale, (b - self.mean) / self.scale)
        q, eq = _normal_interval((a + self.mean) / self.scale, (b + self.mean) / self.scale)
        # rounding of the standardised end points (relative u each) moves Phi by at most
        # phi(z) * dz <= 0.4 * 4u (|edge| + mean) / scale per end
        shift = 0.4 * 8 * _U * (np.abs(a) + np.abs(b) + self.mean + 1.0) / self.scale
        ep = ep + np.where(p > 0, shift, 0.0)
        eq = eq + np.where(q > 0, shift, 0.0)
        norm = self.normalizer
        return p / norm, q / norm, (ep / norm) * (1 + 4 * _U), (eq / norm) * (1 + 4 * _U)


@dataclass(frozen=True)
class LossSpec:
    """Privacy-loss law of an ordered pair (P, Q): losses log(P/Q) under P."""

    atom_losses: np.ndarray
    atom_masses: np.ndarray
    atom_relative_error: float = 16 * _U
    continuous: ExpTiltPart | GaussianPart | None = None
    infinity_mass: float = 0.0
    #: absolute error bound of ``infinity_mass``
    infinity_error: float = 0.0
    #: P-mass (an upper bound) with loss >= high_tail_from that is not represented
    high_tail: float = 0.0
    high_tail_from: float = 0.0
    #: P-mass (an upper bound) with loss <= low_tail_to that is not represented
    low_tail: float = 0.0
    low_tail_to: float = 0.0

    def loss_range(self) -> tuple[float, float]:
        """Smallest and largest finite loss represented (atoms, window, tails)."""
        values = [float(x) for x in self.atom_losses]
        if self.continuous is not None:
            values += [self.continuous.lo, self.continuous.hi]
        if self.low_tail > 0:
            values.append(self.low_tail_to)
        if not values:
            return 0.0, 0.0
        return min(values), max(values)


def gaussian_cut(tail_mass: float) -> float:
    """z with Phi(-z) <= tail_mass / 2 (so both Gaussian tails together are <= tail_mass)."""
    from scipy.special import ndtri

    z = -float(ndtri(tail_mass / 2.0))
    while ndtr(-z) > tail_mass / 2.0:
        z *= 1.0 + 1e-9
    return z


def atoms(losses, masses) -> tuple[np.ndarray, np.ndarray]:
    """Arrays of the atoms with positive mass."""
    losses = np.asarray(losses, dtype=np.float64).reshape(-1)
    masses = np.asarray(masses, dtype=np.float64).reshape(-1)
    keep = masses > 0
    return losses[keep], masses[keep]
