"""Non-adaptive composition of bounded-range mechanisms with several distinct
epsilons: no exact algorithm is known, so this is the minimum of valid bounds."""

from __future__ import annotations

import math

from privloss.bounds._numeric import check_epsilon_list, check_nonnegative, check_probability
from privloss.bounds.optimal_br import theorem2_delta, theorem2_epsilon
from privloss.bounds.rdp import rdp_delta, rdp_epsilon
from privloss.bounds.setwise import ddr_adaptive_br_delta, ddr_adaptive_br_epsilon


def heterogeneous_br_epsilon(epsilons, target_delta: float) -> float:
    """Epsilon of non-adaptively composed epsilon_i-BR mechanisms (distinct epsilon_i).

    Theorem: the minimum of three valid bounds: (a) [CR] Theorem 2 with every
    epsilon_i rounded up to max_i epsilon_i (an eps-BR mechanism is eps'-BR for
    every eps' >= eps); (b) the exact-Renyi route of :mod:`privloss.bounds.rdp`;
    (c) [DDR] Prop. 4 / [CR] eq. (3). Exact when all epsilon_i are equal (then
    (a) is Theorem 2); otherwise not the optimum, which is a supremum over one
    t_i per mechanism in [CR] eq. (4) with no known efficient algorithm.
    Assumptions: non-adaptive (b and c also hold adaptively); heterogeneous.
    Guarantee: valid upper bound.
    Runtime: Theorem 2 at k = len(epsilons), O(k^1.5) typical.
    """
    eps = check_epsilon_list("epsilons", epsilons)
    delta = check_probability("target_delta", target_delta)
    positive = eps[eps > 0]
    if positive.size == 0:
        return 0.0
    rounded = theorem2_epsilon(int(positive.size), float(positive.max()), delta)
    return min(rounded, rdp_epsilon(delta, br_epsilons=positive), ddr_adaptive_br_epsilon(positive, delta))


def heterogeneous_br_delta(epsilons, epsilon_g: float) -> float:
    """Delta at ``epsilon_g`` of :func:`heterogeneous_br_epsilon`'s three bounds (their minimum).

    Theorem, assumptions, guarantee: as :func:`heterogeneous_br_epsilon`.
    """
    eps = check_epsilon_list("epsilons", epsilons)
    eg = check_nonnegative("epsilon_g", epsilon_g, allow_inf=True)
    positive = eps[eps > 0]
    if positive.size == 0 or math.isinf(eg):
        return 0.0
    rounded = theorem2_delta(int(positive.size), float(positive.max()), eg)
    return min(rounded, rdp_delta(eg, br_epsilons=positive), ddr_adaptive_br_delta(positive, eg))
