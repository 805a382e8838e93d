"""One backward step of the adaptive DP/BR recursion on a lattice, for
:mod:`privloss.bounds.adaptive_sequence` (its module docstring states the
theorem, the assumptions and the certified bracket these steps serve).

Definition
----------
A DP step ``e^{-eps} ... `` mixes the value table at ``+-units`` lattice steps
with weights ``expit(+-eps)``; a BR step maximises over the threshold ``t``,
bounded above on each lattice cell (``_br_step_upper``), exactly at lattice
points (``_br_step_lattice``) and refined by a quartic through the lattice
values around each maximiser (``_refine_quartic``).

Privacy guarantee
-----------------
Upper steps round toward more loss (the caller's upper curve); see
:mod:`privloss.bounds.adaptive_sequence`.

Citation
--------
Cesar and Rogers, arXiv:2004.07223, Lemma 5.1; Dong, Durfee and Rogers,
ICML 2020.

Runtime
-------
``O(lattice size)`` per step (vectorised).
"""

from __future__ import annotations

import math

import numpy as np
from privloss.bounds._logistic import expit

__all__ = []


def _q_and_complement(t, epsilon):
    """(q_{eps,t}, 1 - q_{eps,t}) without cancellation (composition.md Def. 2.4)."""
    t = np.asarray(t, dtype=float)
    denominator = -math.expm1(-epsilon)
    q = -np.expm1(t - epsilon) / denominator
    complement = math.exp(-epsilon) * np.expm1(t) / denominator
    return q, complement


def _dp_step(values, low, high, units, h):
    """a V(x - eps) + (1 - a) V(x + eps) at array indices low..high."""
    eps = units * h
    return (expit(eps) * values[low - units:high + 1 - units]
            + expit(-eps) * values[low + units:high + 1 + units])


def _lattice_tables(units, h):
    """q and 1 - q at the lattice points t = m h, m = 0..units, of an (units h)-BR round."""
    return _q_and_complement(np.arange(units + 1) * h, units * h)


def _br_step_upper(values, low, high, units, h):
    """Certified upper bound of one BR round at array indices low..high."""
    eps = units * h
    q, complement = _lattice_tables(units, h)
    omega = 1.0 / -math.expm1(-h)                       # sup |w'|, sup |w''| of the chord weight
    kappa = np.exp((np.arange(units) + 1) * h - eps) / -math.expm1(-eps)   # sup |q'|, |q''|
    curvature = h * h / 8.0
    step = np.abs(np.diff(values))                      # |V[b+1] - V[b]|
    gap = values[:-units] - values[units:]              # D[b] = V[b] - V[b+M]
    size = len(values)
    p1 = np.zeros(size)
    p1[:size - units - 1] = omega * np.maximum(step[:size - units - 1], step[units:])
    q1 = np.zeros(size)
    q1[:size - units - 1] = (np.maximum(np.abs(gap[:-1]), np.abs(gap[1:]))
                             + 2.0 * omega * np.abs(np.diff(gap)))
    p1 *= curvature
    q1 *= curvature
    previous = values[low:high + 1].copy()              # lattice value at t = 0
    best = np.full(high - low + 1, -np.inf)
    for m in range(units):
        b0, b1 = low - m - 1, high - m                  # slice of the piece's left index b
        current = q[m + 1] * values[b0:b1] + complement[m + 1] * values[b0 + units:b1 + units]
        bound = np.maximum(previous, current)
        bound += p1[b0:b1]
        bound += kappa[m] * q1[b0:b1]
        np.maximum(best, bound, out=best)
        previous = current
    return best


def _br_step_lattice(values, low, high, units, h, track=False):
    """max over lattice t of the BR objective (and the argmax if ``track``)."""
    q, complement = _lattice_tables(units, h)
    best = values[low:high + 1].copy()                   # t = 0
    arg = np.zeros(high - low + 1, dtype=np.int64) if track else None
    for m in range(1, units + 1):
        shifted = low - m + units
        current = (q[m] * values[low - m:high + 1 - m]
                   + complement[m] * values[shifted:shifted + high - low + 1])
        if track:
            better = current > best
            arg[better] = m
        np.maximum(best, current, out=best)
    return best, arg


_STENCIL = np.arange(-2, 3)
_QUARTIC = np.linalg.inv(np.vander(_STENCIL.astype(float), 5, increasing=True))


def _refine_quartic(values, low, high, units, h, best, arg):
    """Continuous maximisation near the lattice argmax: maximise the quartic
    through the lattice values at m*-2..m*+2, capped by the certified local bound."""
    inner = np.nonzero((arg >= 2) & (arg <= units - 2))[0]
    if inner.size == 0:
        return best
    q, complement = _lattice_tables(units, h)
    nodes = low + inner
    ms = arg[inner][None, :] + _STENCIL[:, None]                      # (5, n)
    first = values[nodes[None, :] - ms]
    lattice = q[ms] * first + complement[ms] * values[nodes[None, :] - ms + units]
    coef = _QUARTIC @ lattice
    s = np.zeros(inner.size)
    for _ in range(12):                                                # safeguarded Newton
        d1 = coef[1] + s * (2 * coef[2] + s * (3 * coef[3] + s * 4 * coef[4]))
        d2 = 2 * coef[2] + s * (6 * coef[3] + s * 12 * coef[4])
        move = np.where(d2 < 0, -d1 / np.where(d2 < 0, d2, -1.0), 0.0)
        s = np.clip(s + move, -1.0, 1.0)
    peak = coef[0] + s * (coef[1] + s * (coef[2] + s * (coef[3] + s * coef[4])))
    # the true local supremum over the two pieces next to m* is at most this:
    local_cap = _br_step_upper_pieces(values, nodes, arg[inner], units, h)
    refined = np.minimum(peak, local_cap)
    out = best.copy()
    out[inner] = np.maximum(best[inner], refined)
    return out


def _br_step_upper_pieces(values, nodes, ms, units, h):
    """Certified bound of the BR objective over t in [(m-1) h, (m+1) h] per node."""
    eps = units * h
    omega = 1.0 / -math.expm1(-h)
    cap = np.full(nodes.size, -np.inf)
    for m in (ms - 1, ms):
        t0, t1 = m * h, (m + 1) * h
        q0, c0 = _q_and_complement(t0, eps)
        q1, c1 = _q_and_complement(t1, eps)
        a0, a1 = values[nodes - m], values[nodes - m - 1]
        b0, b1 = values[nodes - m + units], values[nodes - m - 1 + units]
        d0, d1 = a0 - b0, a1 - b1
        kappa = np.exp(t1 - eps) / -math.expm1(-eps)
        sup2 = (omega * np.maximum(np.abs(a0 - a1), np.abs(b0 - b1))
                + kappa * (np.maximum(np.abs(d0), np.abs(d1)) + 2 * omega * np.abs(d0 - d1)))
        ends = np.maximum(q0 * a0 + c0 * b0, q1 * a1 + c1 * b1)
        cap = np.maximum(cap, ends + h * h / 8.0 * sup2)
    return cap
