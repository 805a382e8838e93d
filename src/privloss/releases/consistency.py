"""Consistency post-processing of released group counts (optional).

Definition
----------
:func:`consistent_counts` maps noisy group counts ``y`` (integers) to integers
``z`` with

* ``z >= 0`` for every group;
* ``sum z = T`` with ``T = max(0, sum y)`` (the released total is the sum of
  the noisy counts, itself a DP output);
* ``z`` = an unbiased randomized rounding of the Euclidean projection ``p`` of
  ``y`` onto ``{x >= 0, sum x = T}`` (Duchi et al. 2008, sort-based): each
  ``p_i`` is rounded to ``floor(p_i)`` or ``floor(p_i) + 1`` with
  ``P[up] = frac(p_i)``, by systematic sampling with one uniform offset, so
  ``E[z_i | p] = p_i`` and the sum stays exactly ``T``.

Privacy guarantee
-----------------
Post-processing of DP outputs: no additional privacy cost (Dwork and Roth,
Proposition 2.1).  The 95% intervals of the release are those of the raw noisy
counts; the adjusted counts are not covered by them.

Citation
--------
Duchi, Shalev-Shwartz, Singer, Chandra, "Efficient projections onto the
l1-ball", ICML 2008; Madow 1949 (systematic sampling).

Runtime
-------
O(n log n) for n groups.
"""

from __future__ import annotations

import math

__all__ = ["project_to_simplex", "systematic_rounding", "consistent_counts"]


def project_to_simplex(values: list, total: float) -> list:
    """Euclidean projection of ``values`` onto ``{x >= 0, sum x = total}``."""
    if not values:
        return []
    if total <= 0:
        return [0.0] * len(values)
    ordered = sorted(values, reverse=True)
    running, theta = 0.0, 0.0
    for index, value in enumerate(ordered, start=1):
        running += value
        candidate = (running - total) / index
        if value - candidate > 0:
            theta = candidate
    return [max(value - theta, 0.0) for value in values]


def systematic_rounding(values: list, total: int, uniform: float) -> list:
    """Integers with sum ``total`` and ``P[round up] = frac(value)`` for each value."""
    floors = [math.floor(v) for v in values]
    missing = total - sum(floors)
    fractions = [v - f for v, f in zip(values, floors)]
    scale = missing / sum(fractions) if missing > 0 and sum(fractions) > 0 else 0.0
    out, cumulative, next_point = list(floors), 0.0, uniform
    for i, fraction in enumerate(fractions):
        cumulative += fraction * scale
        if missing > 0 and next_point < cumulative:
            out[i] += 1
            next_point += 1.0
            missing -= 1
    # float rounding of the cumulative sums can leave one unit: give it to the largest fraction
    while missing > 0:
        i = max(range(len(values)), key=lambda j: (fractions[j], -j))
        out[i] += 1
        fractions[i] = -1.0
        missing -= 1
    return out


def consistent_counts(noisy: list, source) -> tuple[list, int]:
    """(adjusted integer counts, released total) for integer noisy counts."""
    from privloss.samplers.randomness import resolve_source

    total = max(0, sum(int(v) for v in noisy))
    projected = project_to_simplex([float(v) for v in noisy], float(total))
    uniform = resolve_source(source).random_int_bits(53) / float(1 << 53)
    return systematic_rounding(projected, total, uniform), total
