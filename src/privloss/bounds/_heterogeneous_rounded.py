"""Near-lattice epsilons for the heterogeneous optimal-DP bracket
(:mod:`privloss.bounds.heterogeneous_dp`): each epsilon_i rounded UP onto a short
lattice for the upper law and DOWN onto it for the lower law.

Definition. For distinct values v_g (counts n_g) and positive integers c_g with
v_g ~ c_g h (relative deviation at most ``MAX_DEVIATION``), let
h_up = max_g v_g / c_g and h_down = min_g v_g / c_g, certified as reals
(c_g h_up >= v_g >= c_g h_down for every value, checked in exact rationals on
the largest and smallest value of each group). The upper law is the exact
lattice law of n_g copies of RR_{c_g h_up}, the lower law that of RR_{c_g h_down}
(grouped binomials and sparse convolutions, :func:`_exact_law`).

Privacy guarantee (soundness). The optimal adaptive composition delta of
(epsilon_i, delta_i)-DP mechanisms ([MV] Theorem 1.5) is non-decreasing in each
epsilon_i: an epsilon-DP mechanism is also epsilon'-DP for every epsilon' >=
epsilon, so the supremum over the smaller class is at most the supremum over the
larger one. Rounding every epsilon_i up to c_g h_up >= epsilon_i therefore gives
an upper bound on the optimum, rounding down to c_g h_down <= epsilon_i a lower
bound, whatever the c_g are; the c_g only decide how tight the bracket is. The
two laws carry the exact mode's float-error allowances (pushed outward), so the
returned bracket is certified. Its width is the price of the rounding: with
relative deviation rho the loss is scaled by at most 1 + rho, which moves delta by
about rho epsilon_g |d log delta / d epsilon_g| relative (5.6e-5 for rho = 1e-6 at
k = 10^5, epsilon_i ~ 0.1, delta ~ 1e-3): the caller accepts the bracket only when
that width meets its tolerance (docs/accounting.md, "Near-lattice epsilons").

Citation: Murtagh and Vadhan, TCC 2016 ([MV]), Theorem 1.5; monotonicity of the
optimum in each epsilon_i follows from the definition of DP.

Runtime: O(k log k) for the grouping (a sort), O(sum_g sqrt(n_g log(1/threshold))
x lattice length) for the exact law; about 10 ms for 10^5 nearly equal epsilons
(one group, one binomial).
"""

from __future__ import annotations

import numpy as np

from privloss.bounds._heterogeneous_lattice import (EXACT_LATTICE_POINTS, MAX_LATTICE_WORK,
                                                    _exact_cost, _stepped_laws)

__all__ = []

#: Largest relative rounding of an epsilon_i onto the lattice (the bracket's width,
#: checked by the caller, decides whether the rounding is accepted).
MAX_DEVIATION = 1e-4
#: Lattice steps tried: the smallest epsilon divided by 1, 2, ..., this many.
MAX_SUBDIVISION = 64


def _grouped_multiples(values: np.ndarray) -> np.ndarray | None:
    """Integers c_g >= 1 with |v_g / (c_g h) - 1| <= MAX_DEVIATION for h = min(v) / m,
    for the smallest m = 1 .. MAX_SUBDIVISION that has them; None otherwise."""
    ratios = values / values[0]
    # a few spread-out values first: most subdivisions fail on them (cheap rejection
    # of arbitrary epsilons), the whole array is checked only for a survivor
    sample = ratios[np.linspace(0, ratios.size - 1, min(ratios.size, 64)).astype(np.int64)]

    def multiples_of(values_, subdivision):
        scaled = values_ * subdivision
        multiples = np.rint(scaled)
        return multiples if np.all(np.abs(scaled - multiples) <= MAX_DEVIATION * multiples) else None

    for subdivision in range(1, MAX_SUBDIVISION + 1):
        if multiples_of(sample, subdivision) is None:
            continue
        multiples = multiples_of(ratios, subdivision)
        if multiples is not None:
            return multiples.astype(np.int64)
    return None


def rounded_lattice_laws(eps: np.ndarray, threshold: float):
    """(upper law, lower law) of epsilons rounded up / down onto a short lattice, or
    None when the epsilons are not within ``MAX_DEVIATION`` of one, or the lattice
    exceeds the exact mode's limits."""
    values, counts = np.unique(eps, return_counts=True)
    if values.size < 2:
        return None                       # one value: the exact mode applies
    c = _grouped_multiples(values)
    if c is None:
        return None
    groups, group_of = np.unique(c, return_inverse=True)
    group_counts = np.bincount(group_of, weights=counts).astype(np.int64)
    group_max = np.full(groups.size, -np.inf)
    group_min = np.full(groups.size, np.inf)
    np.maximum.at(group_max, group_of, values)
    np.minimum.at(group_min, group_of, values)
    length, work = _exact_cost(group_counts, groups, threshold)
    if length > EXACT_LATTICE_POINTS or work > MAX_LATTICE_WORK:
        return None
    return _stepped_laws(group_max, group_min, group_counts, groups, threshold)
