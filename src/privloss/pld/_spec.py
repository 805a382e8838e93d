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

#: Assumed relative accuracy of numpy exp/expm1/log/log1p at arguments of modest
#: size (a few ulps are documented; the bound is generous).
SPECIAL_FUNCTION_RELATIVE_ERROR = 1e-15
_U = 2.0 ** -53
#: 5-point Gauss-Legendre rule on [-1, 1]; remainder constant
#: (n!)^4 / ((2n+1) ((2n)!)^3) for n = 5 (Abramowitz-Stegun 25.4.30).
def _gauss_legendre() -> tuple:
    """The 5-point Gauss-Legendre nodes and weights, made on first use
    (``numpy.polynomial`` costs about 25 ms to import; a Laplace PLD never
    integrates)."""
    global _GAUSS_LEGENDRE
    if _GAUSS_LEGENDRE is None:
        _GAUSS_LEGENDRE = np.polynomial.legendre.leggauss(5)
    return _GAUSS_LEGENDRE


_GAUSS_LEGENDRE = None
_GL_REMAINDER = math.factorial(5) ** 4 / (11 * math.factorial(10) ** 3)
#: Cramer's inequality: |He_n(x)| e^{-x^2/4} <= 1.086435 sqrt(n!), so the 10th
#: derivative of the normal density is at most this times e^{-x^2/4}.
_TENTH_DERIVATIVE = 1.086435 * math.sqrt(math.factorial(10)) / math.sqrt(2.0 * math.pi)
#: Standardised bins at most this wide are integrated by quadrature (relative
#: error ~ u), wider ones by differences of ndtr (few of them).
_QUADRATURE_MAX_WIDTH = 0.1


def ndtr_relative_error(z):
    """Bound on the relative error of scipy.special.ndtr(z) for z <= 0.

    Measured against mpmath at 40 digits on 15,000 points of [-37, 8]: at most
    1.98 (z^2 + 8) u (the error of exp(-z^2/2) grows with z^2); we use twice that.
    """
    return 4.0 * (np.square(z) + 8.0) * _U


@dataclass(frozen=True)
class ExpTiltPart:
    """Continuous loss part with P-density A e^{l/2} and Q-density A e^{-l/2} on [lo, hi].

    This is the interior of the Laplace PLD (A = e^{-eps0/2}/4 on (-eps0, eps0))
    and of the bounded-range envelope (A = e^{-eps/2} / (2 (1 - e^{-eps}))).
    Interval masses are closed forms without cancellation:
    P(a, b] = 2A e^{a/2} expm1((b-a)/2), Q(a, b] = 2A e^{-b/2} expm1((b-a)/2);
    P and Q use the same float end points, so the intervals match exactly.
    """

    log_coefficient: float
    lo: float
    hi: float

    def log_density_slope(self, losses):
        """d/dl log of the P-density (1/2 everywhere)."""
        return np.full_like(np.asarray(losses, dtype=np.float64), 0.5)

    def masses(self, edges: np.ndarray):
        """(P, Q, P error, Q error, edge shift) of the intervals (edges[i], edges[i+1]]."""
        a = np.clip(edges[:-1], self.lo, self.hi)
        b = np.clip(edges[1:], self.lo, self.hi)
        width = np.expm1(0.5 * (b - a))
        log_two_a = math.log(2.0) + self.log_coefficient
        p = np.exp(log_two_a + 0.5 * a) * width
        q = np.exp(log_two_a - 0.5 * b) * width
        # exp of an argument x carries relative error ~ u |x| from rounding x itself;
        # b - a is exact or carries u (|a| + |b|), which expm1 turns into a relative error
        # of u (|a| + |b|) / (b - a) only when b - a is not exact (a, b of opposite sign)
        spread = np.where(a * b < 0, (np.abs(a) + np.abs(b)) / np.maximum(b - a, 1e-300), 0.0)
        base = 3 * SPECIAL_FUNCTION_RELATIVE_ERROR + 8 * _U * (np.abs(log_two_a) + 4 + spread)
        rel_p = base + 8 * _U * np.abs(a)
        rel_q = base + 8 * _U * np.abs(b)
        return p, q, p * rel_p, q * rel_q, 0.0


def _normal_interval(za: np.ndarray, zb: np.ndarray):
    """Phi(zb) - Phi(za) for za <= zb by ndtr differences, with an absolute error bound.

    Uses the tail on the side where both ends lie, so the subtraction never
    loses the relative accuracy of a tiny tail.
    """
    from scipy.special import ndtr  # SciPy where used: a pure-DP release never needs it

    right = za >= 0
    low_arg = np.where(right, -zb, za)
    high_arg = np.where(right, -za, zb)
    low, high = ndtr(low_arg), ndtr(high_arg)
    value = np.maximum(high - low, 0.0)
    error = (ndtr_relative_error(np.minimum(low_arg, 0.0)) * low
             + ndtr_relative_error(np.minimum(high_arg, 0.0)) * high + _U * high)
    return value, error


def _normal_quadrature(za: np.ndarray, zb: np.ndarray):
    """Phi(zb) - Phi(za) for narrow intervals by 5-point Gauss-Legendre quadrature.

    Returns (value, absolute error bound). The rule's remainder is
    C_5 (zb - za)^11 max|phi^(10)| with C_5 = (5!)^4 / (11 (10!)^3) and
    |phi^(10)(x)| <= 1.086435 sqrt(10!) e^{-x^2/4} / sqrt(2 pi); the float
    evaluation has relative error <= (2 max x^2 + 24) u (exp of -x^2/2 with x rounded).
    """
    half = 0.5 * (zb - za)
    middle = 0.5 * (za + zb)
    gl_nodes, gl_weights = _gauss_legendre()
    nodes = middle[:, None] + half[:, None] * gl_nodes[None, :]
    density = np.exp(-0.5 * nodes * nodes) * (1.0 / math.sqrt(2.0 * math.pi))
    value = half * (density @ gl_weights)
    nearest = np.where((za <= 0) & (zb >= 0), 0.0, np.minimum(np.abs(za), np.abs(zb)))
    remainder = _GL_REMAINDER * (2.0 * half) ** 11 * _TENTH_DERIVATIVE * np.exp(-0.25 * nearest * nearest)
    far = np.maximum(np.abs(za), np.abs(zb))
    error = value * (2.0 * far * far + 24.0) * _U + remainder
    return value, error


def normal_interval(za: np.ndarray, zb: np.ndarray):
    """Phi(zb) - Phi(za) with an absolute error bound: quadrature for narrow intervals."""
    narrow = (zb - za) <= _QUADRATURE_MAX_WIDTH
    value = np.zeros(za.shape)
    error = np.zeros(za.shape)
    if narrow.any():
        value[narrow], error[narrow] = _normal_quadrature(za[narrow], zb[narrow])
    if (~narrow).any():
        value[~narrow], error[~narrow] = _normal_interval(za[~narrow], zb[~narrow])
    return value, error


@dataclass(frozen=True)
class GaussianPart:
    """Continuous loss part: P-law N(mean, scale^2), Q-law N(-mean, scale^2) restricted to [lo, hi].

    ``normalizer`` divides both (1 for the Gaussian mechanism; Phi(c) - Phi(-c)
    for the truncated Gaussian, whose loss is the same affine function of the
    output on the common support). Since dQ/dP = e^{-l}, mean = scale^2 / 2.
    Intervals are standardised once, z = (l - mean)/scale, and the Q-mass uses
    z + scale (same real interval; only the float rounding of z moves its end
    points, reported as ``edge shift``).
    """

    mean: float
    scale: float
    lo: float
    hi: float
    normalizer: float = 1.0
    normalizer_relative_error: float = 0.0

    def log_density_slope(self, losses):
        """d/dl log of the P-density: -(l - mean) / scale^2."""
        return -(np.asarray(losses, dtype=np.float64) - self.mean) / (self.scale * self.scale)

    def masses(self, edges: np.ndarray):
        """(P, Q, P error, Q error, edge shift) of the intervals (edges[i], edges[i+1]]."""
        clipped = np.clip(edges, self.lo, self.hi)
        z = (clipped - self.mean) / self.scale
        za, zb = z[:-1], z[1:]
        p, ep = normal_interval(za, zb)
        q, eq = normal_interval(za + self.scale, zb + self.scale)
        # the Q end points z + scale are rounded again: at most u |z + scale| each,
        # i.e. a Q-density times that much; and the edges' own rounding is a shift
        qa, qb = za + self.scale, zb + self.scale
        density_q = np.exp(-0.5 * np.minimum(qa * qa, qb * qb)) / math.sqrt(2.0 * math.pi)
        eq = eq + density_q * 2 * _U * (np.abs(qa) + np.abs(qb))
        shift = 4 * _U * (float(np.max(np.abs(clipped))) + self.mean + self.scale) if edges.size else 0.0
        norm = self.normalizer
        rel = self.normalizer_relative_error + 4 * _U
        return (p / norm, q / norm, (ep / norm) * (1 + rel) + p / norm * rel,
                (eq / norm) * (1 + rel) + q / norm * rel, shift)


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
    from scipy.special import ndtr, ndtri

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
