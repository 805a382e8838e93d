"""Gumbel discovery, sampled exactly by peeling (no Gumbel variate is formed).

* :func:`known_selection` – the ``k`` labels of largest ``h_i + Gumbel(Delta_inf/epsilon)``
  in noisy order (``KnownGumb`` step 1), drawn as ``k`` rounds of the peeling
  exponential mechanism (Durfee–Rogers: same law), by
  :class:`privloss.mechanisms.gumbel_topk.GumbelTopK`;
* :func:`unknown_selection` – the same over the visible top-``d_bar`` plus a
  threshold candidate ``bottom`` with score ``h_(d+1) + offset``, stopping at
  ``bottom`` (``UnkGumb`` = Durfee–Rogers ``LimitDom``);
* :func:`threshold_offset`, :func:`threshold_failure` – the offset
  ``Delta_inf + (Delta_inf/epsilon) ln(m/delta_t)`` and the per-release
  failure probability ``delta_t`` that a mixture weight ``delta`` allows.

Why the stopped peeling is a mixture (derived here; the privacy statement of
:func:`privloss.releases.algorithms.unknown_gumbel`): fix neighbours
``D ⊂ D'``. Labels visible in one run but not the other ("one-sided") number
at most ``m = min(Delta_0, d_bar)`` and each has count at most
``h_(d+1) + Delta_inf`` of its own run, so its weight ``exp(h/beta)`` is at most
``(delta_t/m)`` times the weight of ``bottom``, and all of them together at most
``delta_t`` times it.  Let ``N`` be the peeling over the common labels plus
``bottom``.  At every round ``bottom`` is still a candidate, so the one-sided
labels inflate the normaliser by a factor at most ``1 + delta_t``; over at most
``k`` rounds, ``P[M = o] >= (1 + delta_t)^-k P[N = o]`` for every output
``o`` of ``N``.  Hence ``M = (1 - delta) N + delta B`` for some distribution
``B`` with ``delta = 1 - (1 + delta_t)^-k``, on both neighbours, and ``N`` is
``k`` adaptive epsilon-BR steps (common labels and ``bottom`` move by at most
``Delta_inf``, all in the same direction).  A delta-mixture of a mechanism is
dominated by that mechanism composed with the worst (0, delta)-DP mechanism,
so the events ``k x BoundedRange(epsilon)`` + ``ApproxDP(0, delta)`` are valid
under every composition bound.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from privloss.releases.algorithms._common import Visible
from privloss.mechanisms.gumbel_topk import GumbelTopK

#: the threshold offset is rounded up to a multiple of 1/GRID (scores stay integers)
GRID = 1024


def known_selection(counts: np.ndarray, k: int, epsilon: Fraction, linf: int, source) -> list[int]:
    """Indices of ``k`` labels, best first, by exact peeling with rate epsilon/Delta_inf."""
    return GumbelTopK(epsilon, k, score_range=linf).release(counts, source=source)


def threshold_failure(delta: float, k: int) -> float:
    """The largest ``delta_t`` (rounded down) with ``1 - (1 + delta_t)^-k <= delta``."""
    value = math.expm1(-math.log1p(-delta) / k)
    return value * (1.0 - 1e-12)


def threshold_offset(epsilon: Fraction, linf: int, m: int, delta_t: float) -> Fraction:
    """``Delta_inf + (Delta_inf/epsilon) ln(m/delta_t)`` rounded *up* to a multiple of 1/GRID.

    Public parameters only; the float evaluation is pushed up by a relative
    1e-12 and one grid step, far above its rounding error, so the offset is
    never below the exact one (a larger offset only lowers the failure
    probability)."""
    value = linf + float(linf / epsilon) * (math.log(m) - math.log(delta_t))
    return Fraction(math.ceil(value * (1.0 + 1e-12) * GRID) + 1, GRID)


def unknown_selection(visible: Visible, k: int, epsilon: Fraction, linf: int, offset: Fraction,
                      source) -> list[int]:
    """Indices into ``visible.items`` in noisy order, stopping at ``bottom`` or after ``k``.

    Peeling over the visible labels plus ``bottom`` (score
    ``h_(d+1) + offset``); ``min(k, V + 1)`` rounds are drawn and the list is cut
    at ``bottom`` – the law of stopping there, because later rounds are
    discarded.  Scores are scaled by ``GRID`` so they are integers; the
    weights ``exp(epsilon * score / (Delta_inf * GRID))`` are unchanged.
    """
    size = len(visible.items)
    offset_units = offset * GRID                  # an integer: offset is on the 1/GRID grid
    if offset_units.denominator != 1:
        raise ValueError(f"offset must be a multiple of 1/{GRID}, got {offset}")
    bottom = visible.next_count * GRID + offset_units.numerator
    scaled = np.append(visible.counts.astype(np.int64) * GRID, np.int64(bottom))
    rounds = min(k, size + 1)
    chosen = GumbelTopK(epsilon, rounds, score_range=linf * GRID).release(scaled, source=source)
    out = []
    for index in chosen:
        if index == size:       # bottom: stop
            break
        out.append(int(index))
    return out
