"""Brute-force privacy-loss enumeration used as ground truth in tests.

Each mechanism is a generalized randomized response RR_{range, t} (composition.md
Definition 2.4): P = RR(0) puts mass q on output 0 (loss t) and 1 - q on output 1
(loss t - range); Q = RR(1) puts mass p, 1 - p. Pure epsilon-DP is RR_{2 eps, eps}.
The composition's hockey-stick divergence is summed over all 2^k joint outputs in
mpmath at 50 digits (each function sets its own precision with ``workdps``, so no
global precision leaks between tests), independently of every closed form in the
library.
"""

from __future__ import annotations

import itertools

import mpmath
import numpy as np

#: working precision (decimal digits) of the mpmath references
DPS = 50


@mpmath.workdps(DPS)
def rr_pair(width, t):
    """(q, p): probabilities of output 0 under P and Q for RR_{width, t}."""
    width = mpmath.mpf(width)
    t = mpmath.mpf(t)
    if width == 0:
        return mpmath.mpf(1), mpmath.mpf(1)
    denominator = 1 - mpmath.e ** (-width)
    p = (mpmath.e ** (-t) - mpmath.e ** (-width)) / denominator
    q = (1 - mpmath.e ** (t - width)) / denominator
    return q, p


@mpmath.workdps(DPS)
def dp_mechanism(epsilon):
    """The worst-case pure epsilon-DP pair, as (width, t)."""
    return (2 * mpmath.mpf(epsilon), mpmath.mpf(epsilon))


@mpmath.workdps(DPS)
def br_mechanism(epsilon, t):
    """An epsilon-BR pair with parameter t in [0, epsilon], as (width, t)."""
    return (mpmath.mpf(epsilon), mpmath.mpf(t))


@mpmath.workdps(DPS)
def product_delta(mechanisms, epsilon_g):
    """delta_{P||Q}(epsilon_g) of the product of two-point mechanisms, by enumeration."""
    pairs = [rr_pair(w, t) for (w, t) in mechanisms]
    threshold = mpmath.e ** mpmath.mpf(epsilon_g)
    total = mpmath.mpf(0)
    for outcome in itertools.product((0, 1), repeat=len(pairs)):
        p_mass = mpmath.mpf(1)
        q_mass = mpmath.mpf(1)
        for (q, p), y in zip(pairs, outcome):
            p_mass *= q if y == 0 else 1 - q
            q_mass *= p if y == 0 else 1 - p
        gap = p_mass - threshold * q_mass
        if gap > 0:
            total += gap
    return total


@mpmath.workdps(DPS)
def dp_composition_delta(epsilons, epsilon_g, deltas=None):
    """Optimal delta of adaptive pure/approximate DP composition by enumeration (MV)."""
    value = product_delta([dp_mechanism(e) for e in epsilons], epsilon_g)
    if deltas:
        keep = mpmath.mpf(1)
        for d in deltas:
            keep *= 1 - mpmath.mpf(d)
        value = 1 - keep * (1 - value)
    return value


@mpmath.workdps(DPS)
def invert(delta_fn, target, upper, iterations=200):
    """Smallest epsilon_g in [0, upper] with delta_fn(epsilon_g) <= target (bisection)."""
    lo, hi = mpmath.mpf(0), mpmath.mpf(upper)
    if delta_fn(lo) <= target:
        return lo
    for _ in range(iterations):
        mid = (lo + hi) / 2
        if delta_fn(mid) <= target:
            hi = mid
        else:
            lo = mid
    return hi


# float64 versions, fast enough for grids of t vectors (checked against mpmath in
# tests/accounting/test_soundness.py::test_float_enumeration_matches_mpmath)

def float_laws(widths, ts):
    """P and Q masses of all 2^k joint outputs of a product of RR_{width, t} pairs (float64)."""
    p_mass, q_mass = np.ones(1), np.ones(1)
    for width, t in zip(widths, ts):
        q = -np.expm1(t - width) / -np.expm1(-width)       # P(output 0) under P
        p = (np.exp(-t) - np.exp(-width)) / -np.expm1(-width)  # P(output 0) under Q
        p_mass = np.concatenate([p_mass * q, p_mass * (1 - q)])
        q_mass = np.concatenate([q_mass * p, q_mass * (1 - p)])
    return p_mass, q_mass


def float_epsilon(p_mass, q_mass, delta, total):
    lo, hi = 0.0, total
    if np.maximum(p_mass - q_mass, 0).sum() <= delta:
        return 0.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if np.maximum(p_mass - np.exp(mid) * q_mass, 0).sum() <= delta:
            hi = mid
        else:
            lo = mid
    return lo
