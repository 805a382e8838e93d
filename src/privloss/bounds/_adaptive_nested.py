"""Direct evaluation of the adaptive DP/BR recursion at arbitrary points, for
:func:`privloss.bounds.adaptive_sequence.adaptive_sequence_value` (an
estimate for tables and tests, never a certified bound).

Definition
----------
[CR] Lemma 5.1 (= the [DDR] recursion) with at most two BR rounds before the
last mechanism, as nested one-dimensional maximisation: a t-grid on the part
of [0, eps] where the objective can be positive, then golden-section
refinement of the grid maximum and of the cells with the largest first-order
upper bound.

Privacy guarantee
-----------------
None: an estimate, clipped by the caller into the certified bracket.

Citation
--------
Cesar and Rogers, arXiv:2004.07223, Lemmas 5.1, 5.2 and C.1.

Runtime
-------
Milliseconds (one numeric BR round) to about 0.5 s (two).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import gammaln

from privloss.bounds.adaptive_sequence import _br_terminal_step, _q_and_complement, _terminal

__all__ = ["NestedEvaluator"]

_NESTED_GRID = 128          # t-grid of the nested maximisation
_NESTED_STARTS = 3          # local maxima refined per point
_GOLDEN_STEPS = 56          # golden-section steps (bracket shrinks by 0.618^56 ~ 2e-12)


class NestedEvaluator:
    """Direct evaluation of the recursion at arbitrary points (vectorised)."""

    def __init__(self, sequence):
        stages = []
        for kind, eps in sequence:
            if kind == "dp" and stages and stages[-1][0] == "dp":
                stages[-1][1].append(eps)
            elif kind == "dp":
                stages.append(("dp", [eps]))
            else:
                stages.append(("br", eps))
        if stages[-1][0] == "br":
            stages[-1] = ("br_last", stages[-1][1])
        self.stages = [self._compile(stage) for stage in stages]
        sums = [math.fsum(stage[1]) if stage[0] == "dp" else stage[1] for stage in stages]
        self.suffix = [math.fsum(sums[i:]) for i in range(len(sums))] + [0.0]

    @staticmethod
    def _compile(stage):
        if stage[0] != "dp":
            return stage
        # [CR] Lemma 5.2 unrolled: total loss of the DP run and its probability
        shifts = np.zeros(1)
        logw = np.zeros(1)
        for eps in sorted(set(stage[1])):
            count = stage[1].count(eps)
            i = np.arange(count + 1)
            log_binom = gammaln(count + 1) - gammaln(i + 1) - gammaln(count - i + 1)
            log_p = (log_binom - (count - i) * np.logaddexp(0.0, -eps)
                     - i * np.logaddexp(0.0, eps))
            shifts = (shifts[:, None] + ((count - 2 * i) * eps)[None, :]).ravel()
            logw = (logw[:, None] + log_p[None, :]).ravel()
        return ("dp", shifts, np.exp(logw))

    def value(self, x):
        return self._eval(0, np.asarray(x, dtype=float))

    def _eval(self, level, x):
        if level == len(self.stages):
            return _terminal(x)
        out = np.zeros_like(x)
        span = self.suffix[level]
        low = x <= -span
        out[low] = _terminal(x[low])
        inside = ~low & (x < span)
        if not inside.any():
            return out
        xi = x[inside]
        stage = self.stages[level]
        if stage[0] == "dp":
            _, shifts, weights = stage
            inner = self._eval(level + 1, xi[:, None] - shifts[None, :])
            out[inside] = inner @ weights
        elif stage[0] == "br_last":
            out[inside] = _br_terminal_step(xi, stage[1])
        else:
            out[inside] = self._maximise(level, xi, stage[1])
        return out

    def _maximise(self, level, x, eps):
        # the objective vanishes for t <= x - (remaining sum): search only above it
        start = np.clip(x - self.suffix[level + 1], 0.0, eps)[:, None]
        grid = start + (eps - start) * (np.arange(_NESTED_GRID + 1) / _NESTED_GRID)[None, :]
        q, complement = _q_and_complement(grid, eps)
        first = self._eval(level + 1, x[:, None] - grid)
        second = self._eval(level + 1, x[:, None] - grid + eps)
        values = q * first + complement * second
        best = values.max(axis=1)
        # first-order bound of each grid cell [t_g, t_{g+1}] (V non-increasing, q
        # decreasing): q(t_g) V(x - t_{g+1}) + (1 - q(t_g)) V(x - t_{g+1} + eps);
        # it also exposes maxima narrower than a cell
        cell_bound = q[:, :-1] * first[:, 1:] + complement[:, :-1] * second[:, 1:]
        cells = np.argsort(-cell_bound, axis=1)[:, :_NESTED_STARTS]
        top = np.argmax(values, axis=1)[:, None]
        lo = np.concatenate([np.take_along_axis(grid, cells, 1),
                             np.take_along_axis(grid, np.maximum(top - 1, 0), 1)], axis=1)
        right = np.minimum(top + 1, _NESTED_GRID)
        hi = np.concatenate([np.take_along_axis(grid, cells + 1, 1),
                             np.take_along_axis(grid, right, 1)], axis=1)
        xs = np.broadcast_to(x[:, None], lo.shape)
        refined = self._golden(level, xs, lo, hi, eps)
        return np.maximum(best, refined.max(axis=1))

    def _objective(self, level, x, t, eps):
        q, complement = _q_and_complement(t, eps)
        first = self._eval(level + 1, x - t)
        second = self._eval(level + 1, x - t + eps)
        return q * first + complement * second

    def _golden(self, level, x, lo, hi, eps):
        ratio = (math.sqrt(5.0) - 1.0) / 2.0
        c = hi - ratio * (hi - lo)
        d = lo + ratio * (hi - lo)
        fc = self._objective(level, x, c, eps)
        fd = self._objective(level, x, d, eps)
        for _ in range(_GOLDEN_STEPS):
            left = fc >= fd                       # the maximum lies in [lo, d]
            hi, lo = np.where(left, d, hi), np.where(left, lo, c)
            c_new = np.where(left, hi - ratio * (hi - lo), d)
            d_new = np.where(left, c, lo + ratio * (hi - lo))
            probe = self._objective(level, x, np.where(left, c_new, d_new), eps)
            fc, fd = np.where(left, probe, fd), np.where(left, fc, probe)
            c, d = c_new, d_new
        return np.maximum(fc, fd)
